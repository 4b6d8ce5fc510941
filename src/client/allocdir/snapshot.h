// A tar archive of an allocation's ephemeral data (reference §7): alloc/data and each
// task's local/, entry names relative to the alloc dir, directories and symlinks kept
// as such. It is what a replacement allocation on another node pulls to migrate the
// data (served at GET /v1/client/allocation/:id/snapshot).
//
// Blocking file-system work: run it on the pool.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

#include "client/allocdir/alloc_dir.h"

namespace drover::allocdir {

// Appends the archive (POSIX ustar, ending with the two zero blocks) to `out`. If
// walking fails part-way, a file `NOMAD-<alloc id>-ERROR.log` holding the error is
// appended as the last entry, so the receiver learns why the archive is short, and
// the error is returned.
absl::Status WriteSnapshot(const AllocDir& dir, const std::string& alloc_id,
                           const std::vector<std::string>& tasks, std::string* out);

}  // namespace drover::allocdir
