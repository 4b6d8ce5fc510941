// Evaluations and job summaries (http-api "Evaluation", "JobSummary").
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "model/allocation.h"

namespace drover::model {

inline constexpr char kEvalPending[] = "pending";
inline constexpr char kEvalComplete[] = "complete";
inline constexpr char kEvalFailed[] = "failed";
inline constexpr char kEvalBlocked[] = "blocked";
inline constexpr char kEvalCanceled[] = "canceled";

inline constexpr char kTriggerJobRegister[] = "job-register";
inline constexpr char kTriggerJobDeregister[] = "job-deregister";
inline constexpr char kTriggerScaling[] = "job-scaling";
inline constexpr char kTriggerAllocStop[] = "alloc-stop";
inline constexpr char kTriggerNodeUpdate[] = "node-update";
inline constexpr char kTriggerNodeDrain[] = "node-drain";
inline constexpr char kTriggerRetryFailedAlloc[] = "alloc-failure";
inline constexpr char kTriggerReconnect[] = "reconnect";
inline constexpr char kTriggerMaxDisconnectTimeout[] = "max-disconnect-timeout";
inline constexpr char kTriggerRollingUpdate[] = "rolling-update";
inline constexpr char kTriggerDeploymentWatcher[] = "deployment-watcher";
inline constexpr char kTriggerPeriodicJob[] = "periodic-job";

struct Evaluation {
  std::string id;
  int priority = 0;
  std::string type;
  std::string triggered_by;
  std::string namespace_;
  std::string job_id;
  uint64_t job_modify_index = 0;
  std::string node_id;
  uint64_t node_modify_index = 0;
  std::string deployment_id;
  std::string status;
  std::string status_description;
  std::string next_eval;
  std::string previous_eval;
  std::string blocked_eval;
  std::map<std::string, AllocMetric> failed_tg_allocs;
  std::map<std::string, int> queued_allocations;
  uint64_t snapshot_index = 0;
  // A follow-up evaluation (a delayed reschedule) is not processed before this.
  Time wait_until{};
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  int64_t create_time = 0;
  int64_t modify_time = 0;
  friend bool operator==(const Evaluation&, const Evaluation&) = default;
};

struct TaskGroupSummary {
  int queued = 0;
  int complete = 0;
  int failed = 0;
  int running = 0;
  int starting = 0;
  int lost = 0;
  int unknown = 0;
  friend bool operator==(const TaskGroupSummary&, const TaskGroupSummary&) = default;
};

// A periodic or parameterized job's children by status (Nomad's JobChildrenSummary).
struct JobChildrenSummary {
  int64_t pending = 0;
  int64_t running = 0;
  int64_t dead = 0;
  friend bool operator==(const JobChildrenSummary&, const JobChildrenSummary&) = default;
};

struct JobSummary {
  std::string job_id;
  std::string namespace_;
  std::map<std::string, TaskGroupSummary> summary;
  JobChildrenSummary children;
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  friend bool operator==(const JobSummary&, const JobSummary&) = default;
};

}  // namespace drover::model
