// Reading an allocation's files as they grow, for the logs and stream APIs: a task's log
// across its rotated files, or one file, a chunk at a time from a position. Everything
// goes through fs_view.h, so the same confinement holds.
//
// Blocking file-system calls: run them on the pool. A FollowReader is used by one
// caller at a time (one stream's pool work).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

#include "client/allocdir/alloc_dir.h"
#include "client/allocdir/fs_view.h"

namespace drover::allocdir {

struct FollowTarget {
  // Either a task's log (task + "stdout"/"stderr", across its rotated files) ...
  std::string task;
  std::string type;
  // ... or one file (a path relative to the alloc dir).
  std::string path;
  int64_t offset = 0;
  bool from_end = false;  // offset counts back from the end
  int64_t limit = -1;     // the most bytes to read in all (negative: no limit)
};

struct FollowChunk {
  std::string data;
  std::string file;        // relative to the alloc dir
  int64_t end_offset = 0;  // in `file`, after `data`
};

class FollowReader {
 public:
  // The most bytes one Next returns.
  static constexpr int64_t kChunkBytes = 64 << 10;

  FollowReader(const AllocDirLocation& dir, FollowTarget target);

  // The next bytes after what was read (empty at the end of what is there now),
  // moving on to the next rotated file once the current one is exhausted and a newer
  // one exists. The position is placed on the first call, so a log that does not exist
  // yet is waited for. Errors: fs_view.h's.
  absl::StatusOr<FollowChunk> Next();
  // Data bytes read so far.
  int64_t read() const { return read_; }
  // Whether `limit` bytes were read.
  bool AtLimit() const { return target_.limit >= 0 && read_ >= target_.limit; }

 private:
  int64_t NextChunkSize() const;
  absl::StatusOr<FollowChunk> NextOfFile();
  absl::StatusOr<FollowChunk> NextOfLog();
  absl::StatusOr<FollowChunk> ReadFrom(const std::string& rel_path);

  AllocDir dir_;
  FollowTarget target_;
  std::string rel_path_;  // file being read ("" before the first)
  int64_t index_ = -1;    // its rotation index (logs)
  int64_t offset_ = 0;
  int64_t read_ = 0;
};

// The size of a task's log of one type, all rotated files together, now.
absl::StatusOr<int64_t> LogSize(const AllocDir& dir, const std::string& task,
                                const std::string& type);

// The metadata of `path` once its content may be served (a file under secrets/ or
// private/ may not: PermissionDenied); a directory passes as it is.
absl::StatusOr<FileInfo> StatReadable(const AllocDir& dir, const std::string& path);

}  // namespace drover::allocdir
