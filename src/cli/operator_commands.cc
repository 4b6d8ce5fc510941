// drover operator client-state: the client state DB of a data dir, as JSON (Nomad's
// `nomad operator client-state`), for debugging a node. drover operator snapshot
// save/restore/inspect: the servers' state in a file (codec/snapshot.h, docs/ha.md).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include <nlohmann/json.hpp>

#include "codec/snapshot.h"
#include "state/state_db.h"

namespace drover::cli {

int RunOperatorClientState(const std::string& data_dir, Ui& ui) {
  if (data_dir.empty()) {
    ui.Error("-data-dir is required: the agent's data directory");
    return kExitError;
  }
  absl::StatusOr<codec::Json> dump = state::DumpStateDb(state::StateDbFile(data_dir));
  if (!dump.ok()) {
    ui.Error(absl::StrCat("Error reading the client state: ", dump.status().message()));
    return kExitError;
  }
  ui.Output(dump->dump(2));
  return kExitOk;
}

namespace {

// A snapshot may take a while to encode or to restore on a large cluster.
constexpr std::chrono::milliseconds kSnapshotTimeout = std::chrono::minutes(10);

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Written next to `path` and renamed over it, 0600: it holds the nodes' secrets.
absl::Status WriteSecretFile(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", tmp));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace

int RunOperatorSnapshotSave(const std::string& file, HttpClient& client, Ui& ui) {
  absl::StatusOr<HttpResponse> r = client.Do("GET", "/v1/operator/snapshot", "", kSnapshotTimeout);
  if (!r.ok()) {
    ui.Error(absl::StrCat("Failed to get snapshot file: ", r.status().message()));
    return kExitError;
  }
  if (absl::Status s = WriteSecretFile(file, r->body); !s.ok()) {
    ui.Error(absl::StrCat("Failed to write snapshot file: ", s.message()));
    return kExitError;
  }
  ui.Output(absl::StrCat("State file written to ", file));
  return kExitOk;
}

int RunOperatorSnapshotRestore(const std::string& file, HttpClient& client, Ui& ui) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(file);
  if (!bytes.ok()) {
    ui.Error(absl::StrCat("Failed to open snapshot file: ", bytes.status().message()));
    return kExitError;
  }
  // Checked here too: a wrong file is named before it is sent.
  if (auto header = codec::DecodeSnapshotHeader(*bytes); !header.ok()) {
    ui.Error(absl::StrCat("Failed to read snapshot file: ", header.status().message()));
    return kExitError;
  }
  absl::StatusOr<HttpResponse> r =
      client.Do("PUT", "/v1/operator/snapshot", *bytes, kSnapshotTimeout);
  if (!r.ok()) {
    ui.Error(absl::StrCat("Failed to restore snapshot: ", r.status().message()));
    return kExitError;
  }
  ui.Output("Snapshot Restored");
  return kExitOk;
}

int RunSystemGc(HttpClient& client, Ui& ui) {
  absl::StatusOr<HttpResponse> r = client.Do("PUT", "/v1/system/gc", "");
  if (!r.ok()) {
    ui.Error(absl::StrCat("Error running system garbage collection: ", r.status().message()));
    return kExitError;
  }
  return kExitOk;  // Nomad prints nothing
}

int RunOperatorSnapshotInspect(const std::string& file, Ui& ui) {
  absl::StatusOr<std::string> bytes = ReadWholeFile(file);
  if (!bytes.ok()) {
    ui.Error(absl::StrCat("Failed to open snapshot file: ", bytes.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Snapshot> snapshot = codec::DecodeSnapshot(*bytes);
  if (!snapshot.ok()) {
    ui.Error(absl::StrCat("Failed to read snapshot file: ", snapshot.status().message()));
    return kExitError;
  }
  const codec::SnapshotHeader& h = snapshot->header;
  ui.Output(FormatKV({absl::StrCat("Region|", h.region), absl::StrCat("Index|", h.index),
                      absl::StrCat("Records|", h.records),
                      absl::StrCat("Schema Version|", h.schema_version),
                      absl::StrCat("Size|", bytes->size())}));
  return kExitOk;
}

}  // namespace drover::cli
