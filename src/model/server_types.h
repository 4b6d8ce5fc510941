// What a server hands out and takes, shared by the server and the layers that talk to
// it (api/, the agent's adapters): its tables, the immutable objects it shares, the
// answer to a write, and a drain request.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "model/allocation.h"
#include "model/deployment.h"
#include "model/evaluation.h"
#include "model/job.h"
#include "model/job_diff.h"
#include "model/node.h"

namespace drover::model {

// The server state's tables; each has a modify index that blocking queries wait on.
enum class Table { kJobs, kEvals, kAllocs, kNodes, kDeployments };

// Objects in the server state never change once stored: a write stores a new one.
using JobPtr = std::shared_ptr<const Job>;
using EvalPtr = std::shared_ptr<const Evaluation>;
using AllocPtr = std::shared_ptr<const Allocation>;
using NodePtr = std::shared_ptr<const Node>;
using DeploymentPtr = std::shared_ptr<const Deployment>;

// Event stream topics (Nomad's structs.Topic).
inline constexpr char kTopicJob[] = "Job";
inline constexpr char kTopicEvaluation[] = "Evaluation";
inline constexpr char kTopicAllocation[] = "Allocation";
inline constexpr char kTopicDeployment[] = "Deployment";
inline constexpr char kTopicNode[] = "Node";

// One change to the server state as the event stream tells it (Nomad's structs.Event):
// its topic and type, the object's key (an ID) and the keys it may also be filtered by
// (its job and deployment), the index of the change, and the object as it is after it
// (exactly one of the pointers is set).
struct StateEvent {
  std::string topic;
  std::string type;
  std::string key;
  std::string namespace_;  // empty for nodes
  std::vector<std::string> filter_keys;
  uint64_t index = 0;
  JobPtr job;
  EvalPtr eval;
  AllocPtr alloc;
  DeploymentPtr deployment;
  NodePtr node;
};
using StateEventPtr = std::shared_ptr<const StateEvent>;

// One record of the server state as it is stored (state_store.h's layout): what an
// operator snapshot holds.
struct StateRecord {
  std::string key;
  std::string value;
  friend bool operator==(const StateRecord&, const StateRecord&) = default;
};

// A node's allocations as of `index` (of the allocation table).
struct NodeAllocs {
  std::vector<AllocPtr> allocs;
  uint64_t index = 0;
};

// The answer to a write that creates evaluations.
struct EvalResponse {
  std::string eval_id;
  // Every evaluation the write created (eval_id is the first), for writes that may
  // create several.
  std::vector<std::string> eval_ids;
  uint64_t eval_create_index = 0;
  uint64_t job_modify_index = 0;
  std::vector<std::string> warnings;
  uint64_t index = 0;
};

inline constexpr char kSchedulerAlgorithmBinpack[] = "binpack";

// The cluster's scheduler configuration (Nomad's SchedulerConfiguration), changed at
// run time through /v1/operator/scheduler/configuration and kept in the server state.
// Drover schedules by bin packing and does not preempt: `algorithm` is "binpack" and
// every preemption flag false.
struct SchedulerConfig {
  std::string algorithm = kSchedulerAlgorithmBinpack;
  // Whether a task's memory_max raises its hard memory limit above its memory.
  bool memory_oversubscription = false;
  // Nomad refuses registrations from tokens that are not management ones; without
  // ACLs every request is, so it is kept and shown but refuses nothing (as Nomad
  // without ACLs).
  bool reject_job_registration = false;
  // Evaluations wait, pending, until the broker is unpaused; evaluations may then be
  // deleted (DELETE /v1/evaluations).
  bool pause_eval_broker = false;
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  friend bool operator==(const SchedulerConfig&, const SchedulerConfig&) = default;
};

// One change of a group's count through the scaling API (Nomad's ScalingEvent), or a
// report an autoscaler made without one (`error`).
struct ScalingEvent {
  int64_t time = 0;  // Unix nanoseconds
  std::optional<int64_t> count;
  int64_t previous_count = 0;
  std::string message;
  bool error = false;
  std::map<std::string, Value> meta;
  std::string eval_id;
  uint64_t create_index = 0;
  friend bool operator==(const ScalingEvent&, const ScalingEvent&) = default;
};

// POST /v1/job/:id/scale: a group's new count (none: only an event is recorded), and
// what the event says.
struct ScaleRequest {
  std::string ns;
  std::string job_id;
  std::string group;
  std::optional<int64_t> count;
  std::string message;
  bool error = false;
  std::map<std::string, Value> meta;
};

// A job's scaling events per group, newest first, the last kMaxScalingEvents of each.
struct JobScalingEvents {
  static constexpr size_t kMaxScalingEvents = 20;  // Nomad's JobTrackedScalingEvents
  std::string namespace_;
  std::string job_id;
  std::map<std::string, std::vector<ScalingEvent>> events;
  uint64_t modify_index = 0;
  friend bool operator==(const JobScalingEvents&, const JobScalingEvents&) = default;
};

// When a periodic job last launched (Nomad's PeriodicLaunch): the time it was
// registered until its first launch, then each launch's (or skipped launch's) time. A
// new leader launches once, now, when it finds a launch was missed meanwhile.
struct PeriodicLaunch {
  std::string namespace_;
  std::string job_id;
  int64_t launch = 0;  // Unix nanoseconds
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  friend bool operator==(const PeriodicLaunch&, const PeriodicLaunch&) = default;
};

// POST /v1/job/:id/dispatch (Nomad's JobDispatchRequest): a child of a parameterized
// job with this payload and meta.
struct DispatchRequest {
  std::string ns;
  std::string job_id;
  std::string payload;  // raw bytes
  std::map<std::string, std::string> meta;
  std::string idempotency_token;
  std::string id_prefix_template;
};

// Its answer (Nomad's JobDispatchResponse); no evaluation for a periodic child.
struct DispatchResponse {
  std::string dispatched_job_id;
  std::string eval_id;
  uint64_t eval_create_index = 0;
  uint64_t job_create_index = 0;
  uint64_t index = 0;
};

// What registering a job would do (PUT /v1/job/:id/plan), decided by the scheduler
// against the state now and applied nowhere.
struct JobPlan {
  // Per task group (those of the job and those it would stop).
  std::map<std::string, DesiredUpdates> desired_tg_updates;
  // Groups with placements that would not fit, and why.
  std::map<std::string, AllocMetric> failed_tg_allocs;
  // The registered job's JobModifyIndex (0 for a new job): `job run -check-index`.
  uint64_t job_modify_index = 0;
  // The registered job (null for a new one) to the planned one, annotated with the
  // decisions; only when asked for.
  std::optional<JobDiff> diff;
  std::vector<std::string> warnings;
  // A periodic job's next launch after now (none: not periodic, or no launch to come).
  std::optional<common::Time> next_periodic_launch;
  uint64_t index = 0;
};

// The answer to a deployment write (Nomad's DeploymentUpdateResponse).
struct DeploymentUpdateResponse {
  std::string eval_id;  // empty: none (pause)
  uint64_t eval_create_index = 0;
  uint64_t deployment_modify_index = 0;
  std::optional<uint64_t> reverted_job_version;
  uint64_t index = 0;
};

// A drain to start (Nomad's DrainSpec). `deadline`: negative moves everything off at
// once, zero waits as long as it takes, positive stops what is left after that long.
struct DrainSpec {
  common::Duration deadline{0};
  bool ignore_system_jobs = false;
};

}  // namespace drover::model
