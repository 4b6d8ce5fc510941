// Drover's operator snapshot format (`drover operator snapshot save/restore`,
// docs/ha.md): every record of a server's state, as it stores them, so that a single
// embedded server's state can move into etcd and back, and be backed up.
//
//   DROVER-SNAPSHOT 1\n
//   {"Region":..,"SchemaVersion":..,"Index":..,"Records":N}\n
//   {"K":"<base64 key>","V":"<base64 value>"}\n     N times
//
// Text, so that a damaged file is found at once and a person can look inside.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "model/server_types.h"

namespace drover::codec {

struct SnapshotHeader {
  std::string region;
  int schema_version = 0;
  uint64_t index = 0;
  uint64_t records = 0;
};

struct Snapshot {
  SnapshotHeader header;
  std::vector<model::StateRecord> records;
};

std::string EncodeSnapshot(const SnapshotHeader& header,
                           const std::vector<model::StateRecord>& records);
// InvalidArgument, saying where, for anything but a whole snapshot of this format
// (records missing or extra, a line that does not decode).
absl::StatusOr<Snapshot> DecodeSnapshot(std::string_view text);
// The header alone (what `snapshot inspect` shows).
absl::StatusOr<SnapshotHeader> DecodeSnapshotHeader(std::string_view text);

}  // namespace drover::codec
