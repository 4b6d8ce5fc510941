#include "supervisor/exit_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

std::string Errno(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

// flock, retried on EINTR.
int Lock(int fd, int op) {
  int rc;
  do {
    rc = flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

}  // namespace

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

absl::Status AppendExits(const std::string& path, const std::vector<JournalExit>& exits) {
  if (exits.empty())
    return absl::OkStatus();
  std::string batch;
  batch.reserve(exits.size() * kJournalRecordBytes);
  for (const JournalExit& e : exits)
    batch += EncodeJournalExit(e);
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return absl::InternalError(Errno("open", path));
  absl::Status result = absl::OkStatus();
  struct stat st {};
  if (Lock(fd, LOCK_EX) != 0) {
    result = absl::InternalError(Errno("flock", path));
  } else if (fstat(fd, &st) != 0) {
    result = absl::InternalError(Errno("fstat", path));
  } else if (st.st_size % kJournalRecordBytes != 0 &&
             ftruncate(fd, st.st_size - st.st_size % kJournalRecordBytes) != 0) {
    // A write cut short by a machine crash: records must stay aligned.
    result = absl::InternalError(Errno("ftruncate", path));
  } else {
    size_t done = 0;
    while (done < batch.size() && result.ok()) {
      const ssize_t n = write(fd, batch.data() + done, batch.size() - done);
      if (n > 0)
        done += static_cast<size_t>(n);
      else if (n < 0 && errno != EINTR)
        result = absl::InternalError(Errno("write", path));
    }
    if (!result.ok() && done > 0) {
      // Part of the batch may be in the file: cut it off, so that nothing is read that
      // the caller did not get acknowledged (it will append the batch again).
      (void)ftruncate(fd, st.st_size - st.st_size % kJournalRecordBytes);
    }
  }
  close(fd);  // releases the lock
  return result;
}

JournalReader::~JournalReader() {
  if (fd_ >= 0)
    close(fd_);
}

absl::Status JournalReader::OpenIfNeeded() {
  if (fd_ >= 0)
    return absl::OkStatus();
  fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0)
    return absl::InternalError(Errno("open", path_));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JournalExit>> JournalReader::ReadNew(bool wait) {
  busy_ = false;
  more_ = false;
  if (absl::Status s = OpenIfNeeded(); !s.ok())
    return s;
  std::vector<JournalExit> out;
  if (Lock(fd_, wait ? LOCK_SH : LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      busy_ = true;  // a writer is at work
      return out;
    }
    return absl::InternalError(Errno("flock", path_));
  }
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    const std::string error = Errno("fstat", path_);
    Lock(fd_, LOCK_UN);
    return absl::InternalError(error);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < offset_)
    offset_ = 0;  // emptied by another reader
  char buf[kJournalRecordBytes * 256];
  while (offset_ + kJournalRecordBytes <= size) {
    if (out.size() >= kMaxRecordsPerRead) {
      more_ = true;
      break;
    }
    const uint64_t whole = (size - offset_) / kJournalRecordBytes * kJournalRecordBytes;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(whole, sizeof buf));
    const ssize_t n = pread(fd_, buf, want, static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    const size_t records = static_cast<size_t>(n) / kJournalRecordBytes;
    for (size_t i = 0; i < records; ++i) {
      JournalExit e;
      if (DecodeJournalExit(buf + i * kJournalRecordBytes, &e))
        out.push_back(e);
      else
        ++corrupt_;
    }
    offset_ += records * kJournalRecordBytes;
    if (records == 0)
      break;
  }
  Lock(fd_, LOCK_UN);
  return out;
}

absl::Status JournalReader::TruncateIfRead(size_t min_bytes) {
  if (offset_ < min_bytes || fd_ < 0)
    return absl::OkStatus();
  if (Lock(fd_, LOCK_EX | LOCK_NB) != 0)
    return absl::OkStatus();  // a writer is at work; next time
  absl::Status result = absl::OkStatus();
  struct stat st {};
  if (fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) == offset_) {
    if (ftruncate(fd_, 0) != 0)
      result = absl::InternalError(Errno("truncate", path_));
    else
      offset_ = 0;
  }
  Lock(fd_, LOCK_UN);
  return result;
}

}  // namespace drover::supervisor
