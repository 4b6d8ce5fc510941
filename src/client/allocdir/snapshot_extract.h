// Unpacks a snapshot archive (snapshot.h) that another node sent into a built alloc
// dir: the receiving half of migrating an ephemeral disk between nodes (reference §7).
//
// The archive comes over the network from another agent and was made from a tree that
// tasks wrote, so nothing in it is trusted:
//   - only entries under alloc/data and under <task>/local for the `tasks` given are
//     written; entries of other tasks are skipped, and any other name, an absolute
//     name, or one with "." or ".." components fails the extraction;
//   - every directory and file is created relative to the one above it without
//     following any symlink (common/beneath.h), so a link the archive made earlier can
//     never redirect a later entry, and no entry may be nested deeper than tar::kMaxDepth
//     below its root;
//   - a symlink whose target is absolute or climbs out of the alloc dir fails the
//     extraction; a hard link must name a regular file extracted before it;
//   - modes keep their permission bits only (no setuid or setgid); owners come from the
//     archive when the agent runs as root;
//   - no more than `max_data` (the allocation's ephemeral disk) is accepted, counting
//     each entry's data plus 4 KiB for the entry itself (an inode, a name kept here), and
//     no more than kMaxEntries entries;
//   - alloc/data and <task>/local keep the modes and owners the alloc dir gave them;
//   - an archive that ends with the sender's `NOMAD-<prev>-ERROR.log` fails with that
//     file's content.
// A failed extraction leaves a partial tree; the caller destroys the alloc dir (the
// migrate_disk hook rebuilds it empty).
//
// Blocking file-system work: call Feed and Finish on the pool, one call at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "client/allocdir/alloc_dir.h"

namespace drover::allocdir {

class SnapshotExtractor {
 public:
  static constexpr size_t kMaxEntries = 1'000'000;

  // `dest` must be built. `prev_alloc_id` names the sender's error file.
  static absl::StatusOr<std::unique_ptr<SnapshotExtractor>> Open(const AllocDir& dest,
                                                                 std::string prev_alloc_id,
                                                                 std::vector<std::string> tasks,
                                                                 uint64_t max_data);
  ~SnapshotExtractor();
  SnapshotExtractor(const SnapshotExtractor&) = delete;
  SnapshotExtractor& operator=(const SnapshotExtractor&) = delete;

  // The next bytes of the archive, in any pieces. The first error is final: later calls
  // return it again.
  absl::Status Feed(std::string_view bytes);
  // The archive is over: fails if it was cut short or carried the sender's error.
  absl::Status Finish();

  uint64_t data_bytes() const;
  size_t entries() const;

 private:
  struct Impl;
  explicit SnapshotExtractor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace drover::allocdir
