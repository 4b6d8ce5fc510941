// A tar archive of an allocation's ephemeral data (reference §7): alloc/data and each
// task's local/, entry names relative to the alloc dir, directories and symlinks kept
// as such. It is what a replacement allocation on another node pulls to migrate the
// data (served at GET /v1/client/allocation/:id/snapshot).
//
// The tasks wrote this tree and may still be changing it, so the archive is produced
// the way docs/security.md requires: every directory and file is opened relative to
// the one above it without following a symlink (symlinks are stored as links, a
// top-level one included), only regular files are read, a FIFO never blocks, and the
// archive is made piece by piece so it never sits in memory whole, however large the
// files (sparse ones included) are. What a receiver extracts is kept harmless too: no
// setuid or setgid bits, no symlink that is absolute or climbs out of the tree, a file
// with several links sent once (its other names as hard links), and no more file data
// than the allocation's ephemeral disk holds.
//
// Blocking file-system work: call Next on the pool, one call at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "client/allocdir/alloc_dir.h"

namespace drover::allocdir {

class SnapshotStream {
 public:
  // Opens the alloc dir. NotFound if it is gone. More than `max_data` bytes of file data
  // ends the archive with the error entry.
  static absl::StatusOr<std::unique_ptr<SnapshotStream>> Open(const AllocDir& dir,
                                                              std::string alloc_id,
                                                              std::vector<std::string> tasks,
                                                              uint64_t max_data);
  ~SnapshotStream();
  SnapshotStream(const SnapshotStream&) = delete;
  SnapshotStream& operator=(const SnapshotStream&) = delete;

  // The next part of the archive (POSIX ustar), about `max_bytes` long (at least a
  // block), or "" once the archive, with its two zero blocks, is complete. If the walk
  // fails part-way, a file `NOMAD-<alloc id>-ERROR.log` holding the error is the last
  // entry, so the receiver learns why the archive is short; status() says it too.
  std::string Next(size_t max_bytes);
  const absl::Status& status() const { return status_; }

 private:
  struct Impl;
  explicit SnapshotStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  absl::Status status_;
};

}  // namespace drover::allocdir
