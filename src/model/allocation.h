// Allocations: a task group of a job placed on a node (reference §2.1, http-api
// "Allocation").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/job.h"
#include "model/task_state.h"

namespace drover::model {

inline constexpr char kDesiredRun[] = "run";
inline constexpr char kDesiredStop[] = "stop";
inline constexpr char kDesiredEvict[] = "evict";

inline constexpr char kClientPending[] = "pending";
inline constexpr char kClientRunning[] = "running";
inline constexpr char kClientComplete[] = "complete";
inline constexpr char kClientFailed[] = "failed";
inline constexpr char kClientLost[] = "lost";
inline constexpr char kClientUnknown[] = "unknown";

struct AllocatedDeviceResource {
  std::string vendor;
  std::string type;
  std::string name;
  std::vector<std::string> device_ids;
  friend bool operator==(const AllocatedDeviceResource&, const AllocatedDeviceResource&) = default;
};

struct AllocatedTaskResources {
  int64_t cpu_shares = 0;
  int64_t memory_mb = 0;
  int64_t memory_max_mb = 0;
  std::vector<NetworkResource> networks;
  std::vector<AllocatedDeviceResource> devices;
  friend bool operator==(const AllocatedTaskResources&, const AllocatedTaskResources&) = default;
};

struct AllocatedPortMapping {
  std::string label;
  int value = 0;
  int to = 0;
  std::string host_ip;
  friend bool operator==(const AllocatedPortMapping&, const AllocatedPortMapping&) = default;
};

struct AllocatedSharedResources {
  int64_t disk_mb = 0;
  std::vector<NetworkResource> networks;
  std::vector<AllocatedPortMapping> ports;
  friend bool operator==(const AllocatedSharedResources&,
                         const AllocatedSharedResources&) = default;
};

struct AllocatedResources {
  std::map<std::string, AllocatedTaskResources> tasks;
  AllocatedSharedResources shared;
  friend bool operator==(const AllocatedResources&, const AllocatedResources&) = default;
};

struct DesiredTransition {
  std::optional<bool> migrate;
  std::optional<bool> reschedule;
  std::optional<bool> force_reschedule;
  std::optional<bool> no_shutdown_delay;
  friend bool operator==(const DesiredTransition&, const DesiredTransition&) = default;
};

struct AllocDeploymentStatus {
  std::optional<bool> healthy;
  Time timestamp{};
  bool canary = false;
  uint64_t modify_index = 0;
  friend bool operator==(const AllocDeploymentStatus&, const AllocDeploymentStatus&) = default;
};

// Why a placement did or did not happen (Nomad's AllocationMetric, subset).
struct AllocMetric {
  int nodes_evaluated = 0;
  int nodes_filtered = 0;
  int nodes_available = 0;
  std::map<std::string, int> class_filtered;
  std::map<std::string, int> constraint_filtered;
  int nodes_exhausted = 0;
  std::map<std::string, int> dimension_exhausted;
  int coalesced_failures = 0;
  friend bool operator==(const AllocMetric&, const AllocMetric&) = default;
};

// One replacement of a failed allocation (Nomad's RescheduleEvent).
struct RescheduleEvent {
  int64_t reschedule_time = 0;  // Unix nanoseconds
  std::string prev_alloc_id;
  std::string prev_node_id;
  Duration delay{0};
  friend bool operator==(const RescheduleEvent&, const RescheduleEvent&) = default;
};

// The replacements that led to an allocation, oldest first: what the reschedule
// policy counts attempts and grows delays from.
struct RescheduleTracker {
  std::vector<RescheduleEvent> events;
  friend bool operator==(const RescheduleTracker&, const RescheduleTracker&) = default;
};

// complete, failed or lost: the client runs nothing of the allocation any more.
inline bool IsClientTerminalStatus(std::string_view status) {
  return status == kClientComplete || status == kClientFailed || status == kClientLost;
}

struct Allocation {
  std::string id;
  std::string namespace_;
  std::string eval_id;
  std::string name;  // "<job>.<group>[<index>]"
  std::string node_id;
  std::string node_name;
  std::string job_id;
  std::shared_ptr<const Job> job;  // immutable snapshot of the job version it runs
  std::string task_group;
  AllocatedResources allocated_resources;
  AllocMetric metrics;
  std::string desired_status;
  std::string desired_description;
  DesiredTransition desired_transition;
  std::string client_status;
  std::string client_description;
  std::map<std::string, TaskState> task_states;
  // The deployment that placed or updated it (empty: none).
  std::string deployment_id;
  std::optional<AllocDeploymentStatus> deployment_status;
  std::string previous_allocation;
  std::string next_allocation;
  std::string followup_eval_id;
  std::optional<RescheduleTracker> reschedule_tracker;
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  uint64_t alloc_modify_index = 0;
  int64_t create_time = 0;  // Unix nanoseconds
  int64_t modify_time = 0;

  bool ServerTerminal() const {
    return desired_status == kDesiredStop || desired_status == kDesiredEvict;
  }
  bool ClientTerminal() const { return IsClientTerminalStatus(client_status); }
  bool Terminal() const { return ServerTerminal() || ClientTerminal(); }
  // The index in "job.group[index]", or -1 if the name has none.
  int Index() const;
  const TaskGroup* Group() const { return job ? job->FindGroup(task_group) : nullptr; }
};

// The fields a client owns and reports back to the server (reference §1.4).
struct AllocClientUpdate {
  std::string id;
  std::string node_id;
  std::map<std::string, TaskState> task_states;
  std::string client_status;
  std::string client_description;
  std::optional<AllocDeploymentStatus> deployment_status;
  // The deployment deployment_status judges the allocation for (empty: none).
  std::string deployment_id;
  friend bool operator==(const AllocClientUpdate&, const AllocClientUpdate&) = default;
};

}  // namespace drover::model
