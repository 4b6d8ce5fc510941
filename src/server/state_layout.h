// The keys and encodings of the server's state records (layout in state_store.h), shared
// by the write-through, the load on start and the replication from etcd. Internal to
// the server library.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

#include "model/server_types.h"

namespace drover::server::layout {

inline constexpr int kSchemaVersion = 1;
inline constexpr char kVersionKey[] = "meta/version";
inline constexpr char kIndexKey[] = "meta/index";
inline constexpr char kSchedulerConfigKey[] = "meta/scheduler";
inline constexpr char kJobPrefix[] = "jobs/";
inline constexpr char kEvalPrefix[] = "evals/";
inline constexpr char kAllocPrefix[] = "allocs/";
inline constexpr char kNodePrefix[] = "nodes/";
// scaling/<ns>\0<job id>: the job's scaling events.
inline constexpr char kScalingPrefix[] = "scaling/";
inline constexpr char kDeploymentPrefix[] = "deployments/";
// periodic/<ns>\0<job id>: a periodic job's last launch.
inline constexpr char kPeriodicPrefix[] = "periodic/";

// Namespaces and ids may hold '/', never NUL.
inline std::string JobRecordPrefix(const std::string& ns, const std::string& id) {
  std::string key = kJobPrefix;
  key += ns;
  key += '\0';
  key += id;
  key += '\0';
  return key;
}

inline std::string JobRecordKey(const std::string& ns, const std::string& id, uint64_t version) {
  char digits[24];
  std::snprintf(digits, sizeof(digits), "%020" PRIu64, version);
  return JobRecordPrefix(ns, id) + digits;
}

// A job record's key, split: its namespace, id and version.
struct JobRecordName {
  std::string ns;
  std::string id;
  uint64_t version = 0;
};
std::optional<JobRecordName> ParseJobRecordKey(std::string_view key);

const char* TableName(model::Table t);

// The bytes each record holds (state::Encode of the codec's JSON).
std::string EncodeRecord(const model::Job& job);
std::string EncodeRecord(const model::Evaluation& eval);
std::string EncodeRecord(const model::Allocation& alloc);
std::string EncodeRecord(const model::Deployment& deployment);
// With its secret, which the API's encoding leaves out: a server must keep it to
// recognise the node after a restart or a change of leader.
std::string EncodeRecord(const model::Node& node);

// List filters: an ID prefix, and a namespace ("*": every one).
inline bool HasPrefix(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
inline bool NamespaceMatches(const std::string& want, const std::string& have) {
  return want == "*" || want == have;
}

// The key with NULs shown as '/', for messages.
std::string Printable(std::string_view key);

}  // namespace drover::server::layout
