// Rotated log files for one stream of one task (stdout or stderr), like Nomad's logmon
// FileRotator: data goes to `<dir>/<base>.<N>` (e.g. web.stdout.0, web.stdout.1, ...);
// when the current file reaches the size limit, the next write continues in N+1 and
// the oldest files are deleted so that at most `max_files` remain.
//
// Plain blocking I/O: run it on the blocking pool, never on the control loop.
// Thread-compatible: one caller at a time (callers that hand it between threads must
// order the calls, as awaiting common::Offload does). No buffering beyond the OS: each
// successful Write has reached the file when it returns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace drover::supervisor {

class FileRotator {
 public:
  // Scans `dir` (which must exist) for `<base>.<N>` files, N decimal; other names (e.g.
  // `<base>.fifo`, `.<base>.fifo`, `<base>.1.old`) are not ours and are left alone.
  // Continues appending to the highest N if it is smaller than the size limit, else
  // starts N+1; with no such file starts at 0. Files beyond `max_files` (the oldest)
  // are deleted. InvalidArgument if max_files < 1 or max_file_size_bytes < 1.
  static absl::StatusOr<std::unique_ptr<FileRotator>> Open(std::filesystem::path dir,
                                                           std::string base, int max_files,
                                                           int64_t max_file_size_bytes);
  // The same in the directory `dir_fd` refers to (the rotator keeps a duplicate of it),
  // opened earlier: a directory opened before a task ran stays the one its logs go to,
  // whatever the task renames meanwhile. `dir` only names it in messages and paths.
  static absl::StatusOr<std::unique_ptr<FileRotator>> OpenAt(int dir_fd, std::filesystem::path dir,
                                                             std::string base, int max_files,
                                                             int64_t max_file_size_bytes);
  // Opens `dir` for OpenAt: O_PATH, refusing a symlink as its last component.
  static absl::StatusOr<int> OpenDir(const std::filesystem::path& dir);

  ~FileRotator();  // closes the current file; errors are ignored (call Close to see them)
  FileRotator(const FileRotator&) = delete;
  FileRotator& operator=(const FileRotator&) = delete;

  // Appends `data`. When the current file would exceed the size limit it is filled up
  // to the limit and the rest goes to the next file(s): one write may span several
  // files. A file that is exactly full stays current until more data comes, so no
  // empty files are created. On error (named with the path) a prefix of `data` may
  // have been written. FailedPrecondition after Close.
  absl::Status Write(std::string_view data);

  // Closes the current file. Idempotent; later calls return OK.
  absl::Status Close();

  // Index N of the file being written and its path (the last one, after Close).
  int64_t current_index() const { return index_; }
  std::filesystem::path current_path() const { return PathOf(index_); }

 private:
  FileRotator(std::filesystem::path dir, std::string base, int max_files, int64_t max_size);

  std::filesystem::path PathOf(int64_t index) const;
  // Opens `<base>.<index>` for appending (creating it with mode 0644 if missing) and
  // makes it current; `size_` becomes its current size.
  absl::Status OpenFile(int64_t index);
  // Closes the current file and opens the next index. On failure no file is open and
  // index_ still names the old one, so the next Write tries again.
  absl::Status Rotate();
  // Deletes the oldest files until at most max_files_ are left. Failures are logged,
  // not returned: they must not stop new data from being written.
  void Purge();

  // A string, not a path: a path also keeps a list of its components (~400 bytes per
  // rotator, two per task in the supervisor).
  const std::string dir_;
  const std::string base_;
  const int max_files_;
  const int64_t max_size_;
  int dir_fd_ = -1;  // the directory, opened once (O_NOFOLLOW): every file op is relative
  int fd_ = -1;
  bool closed_ = false;
  int64_t index_ = 0;
  int64_t size_ = 0;  // bytes in the current file
  // Indices of our files on disk, ascending (the last is index_ once a file is open).
  std::vector<int64_t> indices_;
};

}  // namespace drover::supervisor
