// Schema versions of a state DB and the upgrades between them (docs/state.md).
//
// Every state DB keeps its schema version in the raw key `meta/version`. Opening one
// brings it to the version this build writes: a new DB gets it; an older one is
// upgraded one version at a time, after a backup copy of its file; a newer one (or one
// no upgrade path leads from) is refused, untouched, with a message saying why.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "state/kv_backend.h"

namespace drover::state {

inline constexpr char kVersionKey[] = "meta/version";

struct SchemaUpgrade {
  int from = 0;      // upgrades version `from` to `from + 1`
  std::string what;  // for the log
  // The writes that do it, computed from what the DB holds. They are committed in one
  // transaction together with the version bump, so a crash leaves either version.
  std::function<absl::StatusOr<std::vector<KvOp>>(KvBackend& db)> ops;
};

struct Schema {
  std::string name;  // "client state DB", for messages
  int version = 1;
  std::vector<SchemaUpgrade> upgrades;
};

// Brings `db` (the file `file`, or none when empty: in-memory backends) to
// `schema.version` as described above. The backup is `<file>.backup-v<N>`, synced
// before the first upgrade step is committed.
absl::Status PrepareSchema(KvBackend& db, const std::filesystem::path& file, const Schema& schema);

// Opens (creating it, and its directory 0700) the LMDB state DB file `file` and brings
// it to `schema` with PrepareSchema; schema errors name the file.
absl::StatusOr<std::unique_ptr<KvBackend>> OpenVersionedLmdb(const std::filesystem::path& file,
                                                             const Schema& schema);

}  // namespace drover::state
