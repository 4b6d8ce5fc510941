#include "supervisor/exit_record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace drover::supervisor {

namespace {

constexpr uint32_t kMagic = 0x4a585244;  // "DRXJ"

// FNV-1a over the record after its first 8 bytes (magic and checksum).
uint32_t Checksum(const char* record) {
  uint32_t h = 2166136261u;
  for (size_t i = 8; i < kJournalRecordBytes; ++i) {
    h ^= static_cast<unsigned char>(record[i]);
    h *= 16777619u;
  }
  return h;
}

template <typename T>
void Put(char* at, T v) {
  std::memcpy(at, &v, sizeof v);
}
template <typename T>
T Get(const char* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

}  // namespace

namespace journal_internal {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

int Lock(int fd, int op) {
  int rc;
  do {
    rc = flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

}  // namespace journal_internal

uint64_t CurrentBoot() {
  static const uint64_t boot = [] {
    char id[64] = {};
    const int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!read(fd, id, sizeof id - 1);
      close(fd);
    }
    uint64_t h = 14695981039346656037ull;  // FNV-1a
    for (const char* c = id; *c != '\0' && *c != '\n'; ++c) {
      h ^= static_cast<unsigned char>(*c);
      h *= 1099511628211ull;
    }
    return h;
  }();
  return boot;
}

// Layout (host byte order; the file never leaves its machine):
//   0 magic u32 | 4 checksum u32 | 8 pid i32 | 12 exit_code i32 | 16 signal i32 |
//   20 reserved | 24 start_ticks u64 | 32 time_ns i64 | 40 user u64 | 48 system u64 |
//   56 boot u64
std::string EncodeJournalExit(const JournalExit& e) {
  std::string r(kJournalRecordBytes, '\0');
  char* p = r.data();
  Put<uint32_t>(p, kMagic);
  Put<int32_t>(p + 8, e.pid);
  Put<int32_t>(p + 12, e.exit_code);
  Put<int32_t>(p + 16, e.signal);
  Put<uint64_t>(p + 24, e.start_ticks);
  Put<int64_t>(p + 32, e.time_ns);
  Put<uint64_t>(p + 40, e.user_ticks);
  Put<uint64_t>(p + 48, e.system_ticks);
  Put<uint64_t>(p + 56, e.boot);
  Put<uint32_t>(p + 4, Checksum(p));
  return r;
}

bool DecodeJournalExit(const char* record, JournalExit* out) {
  if (Get<uint32_t>(record) != kMagic || Get<uint32_t>(record + 4) != Checksum(record))
    return false;
  out->pid = Get<int32_t>(record + 8);
  out->exit_code = Get<int32_t>(record + 12);
  out->signal = Get<int32_t>(record + 16);
  out->start_ticks = Get<uint64_t>(record + 24);
  out->time_ns = Get<int64_t>(record + 32);
  out->user_ticks = Get<uint64_t>(record + 40);
  out->system_ticks = Get<uint64_t>(record + 48);
  out->boot = Get<uint64_t>(record + 56);
  return out->pid > 0;
}

using journal_internal::Errno;
using journal_internal::Lock;

bool AppendExitRecords(const std::string& path, const std::vector<JournalExit>& exits,
                       std::string* error) {
  if (exits.empty())
    return true;
  std::string batch;
  batch.reserve(exits.size() * kJournalRecordBytes);
  for (const JournalExit& e : exits)
    batch += EncodeJournalExit(e);
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = Errno("open", path);
    return false;
  }
  std::string failed;  // the error, once one happened
  struct stat st {};
  if (Lock(fd, LOCK_EX) != 0) {
    failed = Errno("flock", path);
  } else if (fstat(fd, &st) != 0) {
    failed = Errno("fstat", path);
  } else if (st.st_size % kJournalRecordBytes != 0 &&
             ftruncate(fd, st.st_size - st.st_size % kJournalRecordBytes) != 0) {
    // A write cut short by a machine crash: records must stay aligned.
    failed = Errno("ftruncate", path);
  } else {
    size_t done = 0;
    while (done < batch.size() && failed.empty()) {
      const ssize_t n = write(fd, batch.data() + done, batch.size() - done);
      if (n > 0)
        done += static_cast<size_t>(n);
      else if (n < 0 && errno != EINTR)
        failed = Errno("write", path);
    }
    if (!failed.empty() && done > 0) {
      // Part of the batch may be in the file: cut it off, so that nothing is read that
      // the caller did not get acknowledged (it will append the batch again).
      (void)ftruncate(fd, st.st_size - st.st_size % kJournalRecordBytes);
    }
  }
  close(fd);  // releases the lock
  if (failed.empty())
    return true;
  *error = std::move(failed);
  return false;
}

}  // namespace drover::supervisor
