// The read-only view of an allocation's directory that the file-system and logs APIs
// serve (/v1/client/fs/*, reference §8.2). Paths are as a user writes them ("/",
// "alloc/logs", "/web/local/out.txt"): relative to the alloc dir, a leading '/'
// allowed. Tasks write into this tree, so every path is opened beneath the alloc dir
// with common/beneath.h (no "..", absolute, symlink or magic-link escape, even while a
// task swaps directories and symlinks), everything after is done on that descriptor,
// only regular files are read (a FIFO never blocks a read), reads are bounded, and file
// contents under a task's secrets/ or private/ (wherever a symlink led) are never
// returned.
//
// Blocking file-system calls: run them on the pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "client/allocdir/alloc_dir.h"

namespace drover::allocdir {

// The most entries a listing returns; a larger directory is refused (InvalidArgument).
inline constexpr size_t kMaxListEntries = 10'000;
// The most bytes one ReadFileAt returns. Larger reads are streamed in chunks.
inline constexpr int64_t kMaxReadBytes = int64_t{4} << 20;

struct FileInfo {
  std::string name;
  bool is_dir = false;
  int64_t size = 0;
  std::string file_mode;  // as Go prints it: "drwxr-xr-x", "-rw-r--r--", "Lrwxrwxrwx"
  int64_t mod_time_ns = 0;
  std::string content_type;  // "" for directories
};

// NotFound for a missing path; InvalidArgument for a file where a dir is needed, a
// path with a NUL byte or a directory of more than kMaxListEntries entries;
// PermissionDenied for an escape.
absl::StatusOr<std::vector<FileInfo>> ListDir(const AllocDir& dir, const std::string& path);
absl::StatusOr<FileInfo> StatPath(const AllocDir& dir, const std::string& path);
// Up to `limit` bytes from `offset` (at most kMaxReadBytes; a negative limit asks for
// the whole file, refused when it is larger than that). InvalidArgument for a directory,
// a FIFO or anything else that is not a regular file; PermissionDenied for
// secrets/private.
absl::StatusOr<std::string> ReadFileAt(const AllocDir& dir, const std::string& path, int64_t offset,
                                       int64_t limit);

// A task's log of one type ("stdout" or "stderr"): its rotated files in order.
struct LogFile {
  std::string rel_path;  // "alloc/logs/web.stdout.3"
  int64_t index = 0;
  int64_t size = 0;
};
absl::StatusOr<std::vector<LogFile>> LogFiles(const AllocDir& dir, const std::string& task,
                                              const std::string& type);

}  // namespace drover::allocdir
