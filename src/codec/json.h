// JSON <-> model with Nomad's exact field names and encodings (reference http-api.md):
// durations are integer nanoseconds, time.Time fields are RFC 3339 strings
// ("0001-01-01T00:00:00Z" when unset), int64 timestamps (SubmitTime, CreateTime,
// ModifyTime, event Time) are Unix nanoseconds, []byte is base64, and empty lists from
// list endpoints are [] (never null).
//
// Only codec/, api/ and cli/ include JSON headers; everything below works on model
// types. Decoders never throw: a wrong type reports the JSON path
// ("Job.TaskGroups[0].Count: expected number, got string"). Members are matched
// exactly, then ASCII case-insensitively (as Go's encoding/json); unknown members are
// ignored and null means absent.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include <nlohmann/json_fwd.hpp>

#include "model/allocation.h"
#include "model/deployment.h"
#include "model/evaluation.h"
#include "model/job.h"
#include "model/node.h"
#include "model/server_types.h"
#include "model/value.h"

namespace drover::codec {

using Json = nlohmann::json;

// What one parsed document may hold. Whoever sent it (an HTTP client, a plugin, an
// agent answering the CLI) cannot make the parser, or the recursive code that walks
// the result, go deeper or build more than this.
struct JsonLimits {
  size_t max_depth = 256;           // nested arrays and objects
  size_t max_elements = 2'000'000;  // values of any kind
};

// Parses text; malformed input, or input past `limits`, → InvalidArgument naming the
// byte offset or the limit. Nothing past a limit is built.
absl::StatusOr<Json> ParseJson(std::string_view text, const JsonLimits& limits = {});
// Compact, or indented by 4 spaces when `pretty`.
std::string Dump(const Json& j, bool pretty = false);
// The same, refused (ResourceExhausted) once the text would pass `max_bytes`: what a
// request's ?pretty can make the agent build is bounded.
absl::StatusOr<std::string> DumpBounded(const Json& j, bool pretty, size_t max_bytes);
// The compact text of a JSON object whose member values are JSON text already encoded
// (device samples encoded once and spliced into responses), keys in ascending order as
// Dump writes them.
std::string RawObject(const std::map<std::string, std::string>& members);

// Generic values (task `config`).
Json ToJson(const model::Value& v);
model::Value ValueFromJson(const Json& j);

// Jobs. A decoded job keeps "unset" markers where Nomad's API has nulls: TaskGroup
// count -1, zero durations/priorities, empty strings; CanonicalizeJob fills defaults.
Json ToJson(const model::Job& job);
absl::StatusOr<model::Job> JobFromJson(const Json& j);
// JobListStub; `summary` may be null.
Json JobStubJson(const model::Job& job, const model::JobSummary* summary);
Json ToJson(const model::JobSummary& s);
absl::StatusOr<model::JobSummary> JobSummaryFromJson(const Json& j);

// Allocations: the full object (with Job) and the AllocationListStub.
Json ToJson(const model::Allocation& a);
// ToJson(a) without its "Job" entry (state::EncodeAllocation adds the job's bytes).
Json AllocJsonWithoutJob(const model::Allocation& a);
Json AllocStubJson(const model::Allocation& a, bool include_task_states = true);
// AllocatedResources alone (for list stubs with `resources=true`).
Json ToJson(const model::AllocatedResources& r);
absl::StatusOr<model::Allocation> AllocationFromJson(const Json& j);
Json ToJson(const model::TaskState& s);
absl::StatusOr<model::TaskState> TaskStateFromJson(const Json& j);
Json ToJson(const model::TaskEvent& e);
// A client's status update for one allocation: the allocation's JSON fields that it
// sets (ID, NodeID, ClientStatus, ClientDescription, TaskStates, DeploymentStatus, and
// DeploymentID: the deployment that health is for).
Json ToJson(const model::AllocClientUpdate& u);
absl::StatusOr<model::AllocClientUpdate> AllocClientUpdateFromJson(const Json& j);

// Evaluations.
Json ToJson(const model::Evaluation& e);
absl::StatusOr<model::Evaluation> EvaluationFromJson(const Json& j);

// Deployments: the full object (also the server state's record).
Json ToJson(const model::Deployment& d);
absl::StatusOr<model::Deployment> DeploymentFromJson(const Json& j);

// Nomad's SchedulerConfiguration: SchedulerAlgorithm, PreemptionConfig {System, SysBatch,
// Batch, Service SchedulerEnabled}, MemoryOversubscriptionEnabled, RejectJobRegistration,
// PauseEvalBroker, CreateIndex, ModifyIndex. Decoding takes what a PUT sends: fields
// left out keep their values in `base`. A preemption flag set true, or an algorithm other
// than "binpack", is InvalidArgument naming it (Drover does neither yet).
Json ToJson(const model::SchedulerConfig& c);
absl::StatusOr<model::SchedulerConfig> SchedulerConfigFromJson(const Json& j,
                                                               model::SchedulerConfig base);
// Scaling (POST/GET /v1/job/:id/scale, /v1/scaling/...): an event as Nomad's
// ScalingEvent; a job's events ({Namespace, JobID, ScalingEvents: {group: [...]},
// ModifyIndex}, the server state's record); a group's policy as Nomad's ScalingPolicy
// and its list stub (ID, Enabled, Type, Target, CreateIndex, ModifyIndex).
// A periodic job's launch record (the server state's): {Namespace, ID, Launch (Unix
// nanoseconds), CreateIndex, ModifyIndex}.
Json ToJson(const model::PeriodicLaunch& launch);
absl::StatusOr<model::PeriodicLaunch> PeriodicLaunchFromJson(const Json& j);
Json ToJson(const model::ScalingEvent& e);
Json ToJson(const model::JobScalingEvents& events);
absl::StatusOr<model::JobScalingEvents> JobScalingEventsFromJson(const Json& j);
Json ScalingPolicyJson(const model::Job& job, const model::TaskGroup& group);
Json ScalingPolicyStubJson(const model::Job& job, const model::TaskGroup& group);

// The server state's record of it (with its indexes).
absl::StatusOr<model::SchedulerConfig> StoredSchedulerConfigFromJson(const Json& j);

// Nodes: the full object and NodeListStub.
Json ToJson(const model::Node& n);
Json ToJson(const model::NodeEvent& e);
absl::StatusOr<model::NodeEvent> NodeEventFromJson(const Json& j);
Json NodeStubJson(const model::Node& n);
absl::StatusOr<model::Node> NodeFromJson(const Json& j);

// Devices: node device groups (typed attributes) and device statistics.
Json ToJson(const model::Attribute& a);
Json ToJson(const model::NodeDeviceResource& d);
absl::StatusOr<model::NodeDeviceResource> NodeDeviceFromJson(const Json& j,
                                                             const std::string& path);
Json ToJson(const model::DeviceGroupStats& g);
// A JSON array of the groups ([] when empty, as Nomad's DeviceStats).
Json DeviceGroupStatsJson(const std::vector<model::DeviceGroupStats>& groups);
// The pieces of Dump(ToJson(g)), so that samples encoded once, when they arrive, can be
// spliced into responses (devices::DeviceManager): kDeviceGroupOpenJson, then the
// members of g's instances in ascending ID order separated by commas, then
// DeviceGroupCloseJson(g's vendor, type, name).
inline constexpr std::string_view kDeviceGroupOpenJson = "{\"InstanceStats\":{";
// `"<id>":{"Stats":...,"Summary":...,"Timestamp":...}`: one entry of InstanceStats.
std::string DeviceStatsMemberJson(const std::string& id, const model::DeviceStats& s);
std::string DeviceGroupCloseJson(const std::string& vendor, const std::string& type,
                                 const std::string& name);

// RFC 3339 with nanoseconds, UTC ("2026-08-21T12:00:05.123456789Z"); the zero time
// (epoch count 0) is "0001-01-01T00:00:00Z". Parse accepts what Format produces plus
// offsets ("+02:00") and fewer fractional digits.
std::string FormatTime(model::Time t);
absl::StatusOr<model::Time> ParseTime(std::string_view s);

}  // namespace drover::codec
