#include "supervisor/exit_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace drover::supervisor {

using journal_internal::Errno;
using journal_internal::Lock;

absl::Status AppendExits(const std::string& path, const std::vector<JournalExit>& exits) {
  std::string error;
  if (!AppendExitRecords(path, exits, &error))
    return absl::InternalError(error);
  return absl::OkStatus();
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
