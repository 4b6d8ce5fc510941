#include "state/schema.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "common/logging.h"
#include "state/lmdb_backend.h"

namespace drover::state {

namespace {

// A copy of the DB file as it is before any upgrade step (the DB is open, but nothing
// writes to it while we copy).
absl::Status Backup(const std::filesystem::path& file, int version, std::filesystem::path& backup) {
  backup = file.string() + ".backup-v" + std::to_string(version);
  return BackupStateFile(file, backup);
}

}  // namespace

absl::Status PrepareSchema(KvBackend& db, const std::filesystem::path& file, const Schema& schema) {
  auto found = db.Get(kVersionKey);
  if (!found.ok())
    return found.status();
  const std::string current = std::to_string(schema.version);
  if (!found->has_value()) {
    // New, unless it holds records: then it is not a state DB of ours (another file
    // put in its place), and writing into it would mix the two.
    auto any = db.Scan("");
    if (!any.ok())
      return any.status();
    if (!any->empty()) {
      return absl::DataLossError(schema.name + " holds " + std::to_string(any->size()) +
                                 " records but no schema version: not a " + schema.name);
    }
    return db.Commit({KvOp{KvOp::Kind::kPut, kVersionKey, current}});
  }
  const std::string& text = **found;
  int version = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return absl::DataLossError(schema.name + " has an unreadable schema version \"" + text + "\"");
  }
  if (version == schema.version)
    return absl::OkStatus();
  if (version > schema.version) {
    return absl::FailedPreconditionError(
        "incompatible " + schema.name + " schema version \"" + text +
        "\" (this agent reads version " + current +
        "); it was written by a newer agent: run that version, or remove the data dir");
  }
  // Older: every step up to ours must exist before anything is touched.
  std::vector<const SchemaUpgrade*> steps;
  for (int v = version; v < schema.version; ++v) {
    const SchemaUpgrade* step = nullptr;
    for (const SchemaUpgrade& u : schema.upgrades) {
      if (u.from == v)
        step = &u;
    }
    if (step == nullptr) {
      return absl::FailedPreconditionError("incompatible " + schema.name + " schema version \"" +
                                           text + "\": this agent (version " + current +
                                           ") has no upgrade from version " + std::to_string(v));
    }
    steps.push_back(step);
  }
  std::filesystem::path backup;
  if (!file.empty()) {
    if (absl::Status s = Backup(file, version, backup); !s.ok())
      return s;
  }
  for (const SchemaUpgrade* step : steps) {
    auto ops = step->ops(db);
    const std::string to = std::to_string(step->from + 1);
    auto fail = [&](const absl::Status& s) {
      return absl::Status(s.code(), "failed to upgrade the " + schema.name + " from version " +
                                        std::to_string(step->from) + " to " + to + " (" +
                                        step->what + "): " + std::string(s.message()));
    };
    if (!ops.ok())
      return fail(ops.status());
    ops->push_back(KvOp{KvOp::Kind::kPut, kVersionKey, to});
    if (absl::Status s = db.Commit(*ops); !s.ok())
      return fail(s);
    DROVER_LOG_INFO("state: upgraded the {} from version {} to {} ({}); backup: {}", schema.name,
                    step->from, to, step->what, backup.empty() ? "none" : backup.string());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KvBackend>> OpenVersionedLmdb(const std::filesystem::path& file,
                                                             const Schema& schema) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::filesystem::permissions(file.parent_path(), std::filesystem::perms::owner_all, ec);
  if (ec) {
    return absl::InternalError("failed to create '" + file.parent_path().string() +
                               "': " + ec.message());
  }
  auto backend = OpenLmdb(file);
  if (!backend.ok())
    return backend.status();
  if (absl::Status s = PrepareSchema(**backend, file, schema); !s.ok())
    return absl::Status(s.code(), file.string() + ": " + std::string(s.message()));
  return backend;
}

}  // namespace drover::state
