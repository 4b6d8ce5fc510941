// The real client state DB engine: one LMDB file (B+tree, copy-on-write, crash-safe;
// the C counterpart of the bbolt Nomad uses). Each Commit is one write transaction,
// synced to disk before it returns.
#pragma once

#include <filesystem>
#include <memory>

#include "state/kv_backend.h"

namespace drover::state {

struct LmdbOptions {
  // The most the file may grow to (a sparse reservation, not an allocation).
  size_t map_size = size_t{1} << 30;
};

// Opens (creating, mode 0600) the database file `path`. Errors name the file; a file
// another process holds open for writing is not detected by LMDB itself, so callers
// keep one agent per data dir. A file written before records were framed is copied to
// `<path>.backup-unframed` before its records are framed.
absl::StatusOr<std::unique_ptr<KvBackend>> OpenLmdb(const std::filesystem::path& path,
                                                    LmdbOptions options = {});

// Copies the DB file `file` to `backup` (mode 0600, synced with its directory) between
// commits, when LMDB's file is consistent.
absl::Status BackupStateFile(const std::filesystem::path& file,
                             const std::filesystem::path& backup);

}  // namespace drover::state
