// The read-only view of an allocation's directory that the file-system and logs APIs
// serve (/v1/client/fs/*, reference §8.2). Paths are as a user writes them ("/",
// "alloc/logs", "/web/local/out.txt"): relative to the alloc dir, a leading '/'
// allowed. Every path is resolved under the alloc dir (no "..", absolute or symlink
// escape), and file contents under a task's secrets/ or private/ are never returned.
//
// Blocking file-system calls: run them on the pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "client/allocdir/alloc_dir.h"

namespace drover::allocdir {

struct FileInfo {
  std::string name;
  bool is_dir = false;
  int64_t size = 0;
  std::string file_mode;  // as Go prints it: "drwxr-xr-x", "-rw-r--r--", "Lrwxrwxrwx"
  int64_t mod_time_ns = 0;
  std::string content_type;  // "" for directories
};

// NotFound for a missing path; InvalidArgument for a file where a dir is needed.
absl::StatusOr<std::vector<FileInfo>> ListDir(const AllocDir& dir, const std::string& path);
absl::StatusOr<FileInfo> StatPath(const AllocDir& dir, const std::string& path);
// Up to `limit` bytes (all when negative) from `offset`. InvalidArgument for a
// directory; PermissionDenied for secrets/private.
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
