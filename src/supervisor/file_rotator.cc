#include "supervisor/file_rotator.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <system_error>

#include "common/beneath.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace drover::supervisor {
namespace fs = std::filesystem;
namespace {

std::string Errno(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// The index N of `name` if it is `<base>.<N>` with N in plain decimal. Leading zeros
// are refused so that names and indices map one to one ("x.01" is not file 1 — we
// would never write to it under that name).
std::optional<int64_t> ParseIndex(std::string_view name, std::string_view base) {
  if (name.size() <= base.size() + 1 || !name.starts_with(base) || name[base.size()] != '.') {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(base.size() + 1);
  if (digits.size() > 18 || (digits.size() > 1 && digits[0] == '0') ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t index = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return index;
}

}  // namespace

FileRotator::FileRotator(fs::path dir, std::string base, int max_files, int64_t max_size)
    : dir_(dir.native()), base_(std::move(base)), max_files_(max_files), max_size_(max_size) {}

FileRotator::~FileRotator() {
  (void)Close();
  if (dir_fd_ >= 0)
    ::close(dir_fd_);
}

absl::StatusOr<int> FileRotator::OpenDir(const fs::path& dir) {
  // O_PATH: the descriptor only anchors the *at calls, and closing one skips the
  // flush and the directory-notification lookup a readable one costs.
  const int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError("failed to open log dir '" + dir.string() + "': " + Errno(errno));
  }
  return fd;
}

absl::StatusOr<std::unique_ptr<FileRotator>> FileRotator::Open(fs::path dir, std::string base,
                                                               int max_files,
                                                               int64_t max_file_size_bytes) {
  DROVER_ASSIGN_OR_RETURN(const int dir_fd, OpenDir(dir));
  auto r = OpenAt(dir_fd, std::move(dir), std::move(base), max_files, max_file_size_bytes);
  ::close(dir_fd);
  return r;
}

absl::StatusOr<std::unique_ptr<FileRotator>> FileRotator::OpenAt(int dir_fd, fs::path dir,
                                                                 std::string base, int max_files,
                                                                 int64_t max_file_size_bytes) {
  if (max_files < 1) {
    return absl::InvalidArgumentError("log max_files must be at least 1, got " +
                                      std::to_string(max_files));
  }
  if (max_file_size_bytes < 1) {
    return absl::InvalidArgumentError("log max file size must be at least 1 byte, got " +
                                      std::to_string(max_file_size_bytes));
  }
  if (base.empty() || base.find('/') != std::string::npos) {
    return absl::InvalidArgumentError("invalid log file base name '" + base + "'");
  }
  std::unique_ptr<FileRotator> r(
      new FileRotator(std::move(dir), std::move(base), max_files, max_file_size_bytes));

  // Everything below goes through this descriptor: the directory is writable by tasks,
  // and a task that swaps it (or a file in it) for a symlink must not lead us, root,
  // into writing or deleting files elsewhere.
  r->dir_fd_ = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (r->dir_fd_ < 0) {
    return absl::InternalError("failed to open log dir '" + r->dir_ + "': " + Errno(errno));
  }
  const int scan_fd = ::openat(r->dir_fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* scan = scan_fd < 0 ? nullptr : ::fdopendir(scan_fd);
  if (scan == nullptr) {
    const int err = errno;
    if (scan_fd >= 0)
      ::close(scan_fd);
    return absl::InternalError("failed to list log dir '" + r->dir_ + "': " + Errno(err));
  }
  ::rewinddir(scan);
  while (const dirent* e = ::readdir(scan)) {
    const std::optional<int64_t> index = ParseIndex(e->d_name, r->base_);
    // Only regular files, not symlinks.
    struct stat st {};
    if (index.has_value() && ::fstatat(r->dir_fd_, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode)) {
      r->indices_.push_back(*index);
    }
  }
  ::closedir(scan);
  std::sort(r->indices_.begin(), r->indices_.end());

  DROVER_RETURN_IF_ERROR(r->OpenFile(r->indices_.empty() ? 0 : r->indices_.back()));
  if (r->size_ >= r->max_size_) {
    DROVER_RETURN_IF_ERROR(r->Rotate());
  }
  return r;
}

fs::path FileRotator::PathOf(int64_t index) const {
  return std::filesystem::path(dir_) / (base_ + "." + std::to_string(index));
}

absl::Status FileRotator::OpenFile(int64_t index) {
  const fs::path path = PathOf(index);
  const std::string name = path.filename().string();
  // Tasks can write to the logs dir. Whatever is already there under this name is
  // appended to only if it is a regular file we own with no other link to it;
  // anything else (a FIFO, a device, a hard link to a file elsewhere, a file someone
  // else made) is removed and replaced. O_NOFOLLOW: never through a symlink;
  // O_NONBLOCK: never stuck opening a FIFO.
  int fd = -1;
  bool created = false;
  struct stat st {};
  for (int attempt = 0; fd < 0; ++attempt) {
    if (attempt == 3) {
      return absl::FailedPreconditionError("log file '" + path.string() +
                                           "' keeps being replaced by something else");
    }
    created = true;
    fd = ::openat(dir_fd_, name.c_str(),
                  O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == EEXIST) {
      created = false;
      fd = ::openat(dir_fd_, name.c_str(),
                    O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    }
    if (fd < 0 && errno != ELOOP && errno != ENXIO && errno != EEXIST && errno != ENOENT &&
        errno != EISDIR) {
      return absl::InternalError("failed to open log file '" + path.string() +
                                 "': " + Errno(errno));
    }
    if (fd >= 0 && ::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return absl::InternalError("failed to stat log file '" + path.string() + "': " + Errno(err));
    }
    if (fd >= 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == ::geteuid())
      break;
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
    DROVER_LOG_WARN("logs: replacing '{}', which is not a log file of ours", path.string());
    if (absl::Status removed = common::RemoveTreeAt(dir_fd_, name); !removed.ok()) {
      return absl::InternalError("failed to remove '" + path.string() +
                                 "': " + std::string(removed.message()));
    }
  }
  if (created && ::fchmod(fd, 0644) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::InternalError("failed to chmod log file '" + path.string() + "': " + Errno(err));
  }
  // Back to blocking writes: the data must reach the file before Write returns.
  ::fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
  fd_ = fd;
  index_ = index;
  size_ = st.st_size;
  if (indices_.empty() || indices_.back() != index) {
    indices_.push_back(index);
  }
  Purge();
  return absl::OkStatus();
}

absl::Status FileRotator::Rotate() {
  if (fd_ >= 0) {
    const int r = ::close(fd_);
    fd_ = -1;
    if (r != 0) {
      // The data reached the file (no buffering here); note the error and go on.
      DROVER_LOG_WARN("logs: failed to close '{}': {}", PathOf(index_).string(), Errno(errno));
    }
  }
  // If this fails, index_ still names the full file and the next Write tries again.
  return OpenFile(index_ + 1);
}

void FileRotator::Purge() {
  // Not an error for the writer: failing to delete an old file must not lose new data.
  while (indices_.size() > static_cast<size_t>(max_files_)) {
    const fs::path old = PathOf(indices_.front());
    indices_.erase(indices_.begin());
    if (::unlinkat(dir_fd_, old.filename().c_str(), 0) != 0 && errno != ENOENT) {
      DROVER_LOG_WARN("logs: failed to delete old log file '{}': {}", old.string(), Errno(errno));
    }
  }
}

absl::Status FileRotator::Write(std::string_view data) {
  if (closed_) {
    return absl::FailedPreconditionError("log file '" + PathOf(index_).string() + "' is closed");
  }
  while (!data.empty()) {
    if (fd_ < 0 || size_ >= max_size_) {
      DROVER_RETURN_IF_ERROR(Rotate());
    }
    const size_t room = static_cast<size_t>(max_size_ - size_);
    const ssize_t n = ::write(fd_, data.data(), std::min(data.size(), room));
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return absl::InternalError("failed to write log file '" + PathOf(index_).string() +
                                 "': " + Errno(errno));
    }
    size_ += n;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status FileRotator::Close() {
  if (closed_) {
    return absl::OkStatus();
  }
  closed_ = true;
  if (fd_ < 0) {
    return absl::OkStatus();
  }
  const int r = ::close(fd_);
  fd_ = -1;
  if (r != 0) {
    // Not retried: on Linux the descriptor is gone even when close reports an error.
    return absl::InternalError("failed to close log file '" + PathOf(index_).string() +
                               "': " + Errno(errno));
  }
  return absl::OkStatus();
}

}  // namespace drover::supervisor
