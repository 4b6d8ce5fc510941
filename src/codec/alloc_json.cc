// Allocations (full objects and list stubs), allocation metrics, task states and task
// events.
#include <memory>
#include <string>
#include <vector>

#include "codec/internal/json_util.h"
#include "codec/internal/model_json.h"
#include "codec/json.h"

namespace drover::codec {

using internal::DurationJson;
using internal::IntMapOrNull;
using internal::ListOrEmpty;
using internal::ListOrNull;
using internal::MapOrNull;
using internal::Reader;

namespace internal {

Json AllocMetricJson(const model::AllocMetric& m) {
  Json j = Json::object();
  j["NodesEvaluated"] = m.nodes_evaluated;
  j["NodesFiltered"] = m.nodes_filtered;
  // Nomad's NodesAvailable is a map of datacenter to count, which we do not track; the
  // total goes in NodesInPool and the map stays empty.
  j["NodesInPool"] = m.nodes_available;
  j["NodesAvailable"] = Json::object();
  j["ClassFiltered"] = IntMapOrNull(m.class_filtered);
  j["ConstraintFiltered"] = IntMapOrNull(m.constraint_filtered);
  j["NodesExhausted"] = m.nodes_exhausted;
  j["ClassExhausted"] = nullptr;
  j["DimensionExhausted"] = IntMapOrNull(m.dimension_exhausted);
  j["QuotaExhausted"] = nullptr;
  j["ResourcesExhausted"] = nullptr;
  j["Scores"] = nullptr;
  j["ScoreMetaData"] = nullptr;
  j["AllocationTime"] = 0;
  j["CoalescedFailures"] = m.coalesced_failures;
  return j;
}

absl::StatusOr<model::AllocMetric> DecodeAllocMetric(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::AllocMetric m;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("NodesEvaluated", m.nodes_evaluated);
  r.Read("NodesFiltered", m.nodes_filtered);
  if (r.Get("NodesInPool") != nullptr) {
    r.Read("NodesInPool", m.nodes_available);
  } else if (const Json* avail = r.Get("NodesAvailable"); avail != nullptr) {
    // A bare count, or Nomad's per-datacenter map (summed).
    if (avail->is_object()) {
      std::map<std::string, int> per_dc;
      r.Read("NodesAvailable", per_dc);
      m.nodes_available = 0;
      for (const auto& [dc, n] : per_dc) {
        m.nodes_available += n;
      }
    } else {
      r.Read("NodesAvailable", m.nodes_available);
    }
  }
  r.Read("ClassFiltered", m.class_filtered);
  r.Read("ConstraintFiltered", m.constraint_filtered);
  r.Read("NodesExhausted", m.nodes_exhausted);
  r.Read("DimensionExhausted", m.dimension_exhausted);
  r.Read("CoalescedFailures", m.coalesced_failures);
  if (!r.ok()) {
    return r.status();
  }
  return m;
}

absl::StatusOr<model::TaskEvent> DecodeTaskEvent(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::TaskEvent e;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Type", e.type);
  r.Read("Time", e.time);
  r.Read("Message", e.message);
  r.Read("DisplayMessage", e.display_message);
  r.Read("Details", e.details);
  r.Read("FailsTask", e.fails_task);
  r.Read("RestartReason", e.restart_reason);
  r.Read("SetupError", e.setup_error);
  r.Read("DriverError", e.driver_error);
  r.Read("ExitCode", e.exit_code);
  r.Read("Signal", e.signal);
  r.Read("KillTimeout", e.kill_timeout);
  r.Read("KillError", e.kill_error);
  r.Read("KillReason", e.kill_reason);
  r.Read("StartDelay", e.start_delay);
  r.Read("DownloadError", e.download_error);
  r.Read("ValidationError", e.validation_error);
  r.Read("FailedSibling", e.failed_sibling);
  r.Read("TaskSignalReason", e.task_signal_reason);
  r.Read("TaskSignal", e.task_signal);
  r.Read("DriverMessage", e.driver_message);
  r.Read("GenericSource", e.generic_source);
  if (!r.ok()) {
    return r.status();
  }
  return e;
}

absl::StatusOr<model::TaskState> DecodeTaskState(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::TaskState s;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("State", s.state);
  r.Read("Failed", s.failed);
  r.Read("Restarts", s.restarts);
  r.Read("LastRestart", s.last_restart);
  r.Read("StartedAt", s.started_at);
  r.Read("FinishedAt", s.finished_at);
  std::vector<model::TaskEvent> events;
  r.ReadList("Events", events, DecodeTaskEvent);
  if (!r.ok()) {
    return r.status();
  }
  // A task state holds its last kMaxEvents events; a peer that sends more is cut to those.
  if (events.size() > model::TaskState::kMaxEvents)
    events.erase(events.begin(),
                 events.end() - static_cast<std::ptrdiff_t>(model::TaskState::kMaxEvents));
  s.events = model::TaskEventList(std::move(events));
  return s;
}

}  // namespace internal

namespace {

using internal::AllocMetricJson;
using internal::DecodeAllocMetric;
using internal::DecodeNetwork;
using internal::NetworksOrNull;

Json DeploymentStatusJson(const std::optional<model::AllocDeploymentStatus>& d) {
  if (!d) {
    return nullptr;
  }
  return Json{{"Healthy", internal::OptionalBool(d->healthy)},
              {"Timestamp", FormatTime(d->timestamp)},
              {"Canary", d->canary},
              {"ModifyIndex", d->modify_index}};
}

Json TaskStatesJson(const std::map<std::string, model::TaskState>& states) {
  return MapOrNull(states, [](const model::TaskState& s) { return ToJson(s); });
}

absl::StatusOr<model::AllocatedDeviceResource> DecodeAllocatedDevice(const Json& j,
                                                                     const std::string& path) {
  Reader r(j, path);
  model::AllocatedDeviceResource d;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Vendor", d.vendor);
  r.Read("Type", d.type);
  r.Read("Name", d.name);
  r.Read("DeviceIDs", d.device_ids);
  if (!r.ok()) {
    return r.status();
  }
  return d;
}

absl::StatusOr<model::AllocatedTaskResources> DecodeAllocatedTask(const Json& j,
                                                                  const std::string& path) {
  Reader r(j, path);
  model::AllocatedTaskResources t;
  if (!r.ExpectObject()) {
    return r.status();
  }
  if (const Json* cpu = r.Get("Cpu"); cpu != nullptr) {
    Reader c(*cpu, r.Path("Cpu"));
    if (c.ExpectObject()) {
      c.Read("CpuShares", t.cpu_shares);
    }
    r.Fail(c.status());
  }
  if (const Json* mem = r.Get("Memory"); mem != nullptr) {
    Reader m(*mem, r.Path("Memory"));
    if (m.ExpectObject()) {
      m.Read("MemoryMB", t.memory_mb);
      m.Read("MemoryMaxMB", t.memory_max_mb);
    }
    r.Fail(m.status());
  }
  r.ReadList("Networks", t.networks, DecodeNetwork);
  r.ReadList("Devices", t.devices, DecodeAllocatedDevice);
  if (!r.ok()) {
    return r.status();
  }
  return t;
}

absl::StatusOr<model::AllocatedPortMapping> DecodePortMapping(const Json& j,
                                                              const std::string& path) {
  Reader r(j, path);
  model::AllocatedPortMapping p;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Label", p.label);
  r.Read("Value", p.value);
  r.Read("To", p.to);
  r.Read("HostIP", p.host_ip);
  if (!r.ok()) {
    return r.status();
  }
  return p;
}

absl::StatusOr<model::AllocatedSharedResources> DecodeAllocatedShared(const Json& j,
                                                                      const std::string& path) {
  Reader r(j, path);
  model::AllocatedSharedResources s;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("DiskMB", s.disk_mb);
  r.ReadList("Networks", s.networks, DecodeNetwork);
  r.ReadList("Ports", s.ports, DecodePortMapping);
  if (!r.ok()) {
    return r.status();
  }
  return s;
}

absl::StatusOr<model::AllocatedResources> DecodeAllocatedResources(const Json& j,
                                                                   const std::string& path) {
  Reader r(j, path);
  model::AllocatedResources res;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.ReadMap("Tasks", res.tasks, DecodeAllocatedTask);
  r.ReadObject("Shared", res.shared, DecodeAllocatedShared);
  if (!r.ok()) {
    return r.status();
  }
  return res;
}

absl::StatusOr<model::DesiredTransition> DecodeDesiredTransition(const Json& j,
                                                                 const std::string& path) {
  Reader r(j, path);
  model::DesiredTransition t;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Migrate", t.migrate);
  r.Read("Reschedule", t.reschedule);
  r.Read("ForceReschedule", t.force_reschedule);
  r.Read("NoShutdownDelay", t.no_shutdown_delay);
  if (!r.ok()) {
    return r.status();
  }
  return t;
}

Json DesiredTransitionJson(const model::DesiredTransition& t) {
  return Json{{"Migrate", internal::OptionalBool(t.migrate)},
              {"Reschedule", internal::OptionalBool(t.reschedule)},
              {"ForceReschedule", internal::OptionalBool(t.force_reschedule)},
              {"NoShutdownDelay", internal::OptionalBool(t.no_shutdown_delay)}};
}

Json RescheduleTrackerJson(const std::optional<model::RescheduleTracker>& t) {
  if (!t)
    return nullptr;
  return Json{{"Events", internal::ListOrNull(t->events,
                                              [](const model::RescheduleEvent& e) {
                                                return Json{
                                                    {"RescheduleTime", e.reschedule_time},
                                                    {"PrevAllocID", e.prev_alloc_id},
                                                    {"PrevNodeID", e.prev_node_id},
                                                    {"Delay", internal::DurationJson(e.delay)}};
                                              })},
              {"LastReschedule", ""}};
}

absl::StatusOr<model::RescheduleEvent> DecodeRescheduleEvent(const Json& j,
                                                             const std::string& path) {
  Reader r(j, path);
  model::RescheduleEvent e;
  if (!r.ExpectObject())
    return r.status();
  r.Read("RescheduleTime", e.reschedule_time);
  r.Read("PrevAllocID", e.prev_alloc_id);
  r.Read("PrevNodeID", e.prev_node_id);
  r.Read("Delay", e.delay);
  if (!r.ok())
    return r.status();
  return e;
}

absl::StatusOr<model::RescheduleTracker> DecodeRescheduleTracker(const Json& j,
                                                                 const std::string& path) {
  Reader r(j, path);
  model::RescheduleTracker t;
  if (!r.ExpectObject())
    return r.status();
  r.ReadList("Events", t.events, DecodeRescheduleEvent);
  if (!r.ok())
    return r.status();
  return t;
}

absl::StatusOr<model::AllocDeploymentStatus> DecodeDeploymentStatus(const Json& j,
                                                                    const std::string& path) {
  Reader r(j, path);
  model::AllocDeploymentStatus d;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Healthy", d.healthy);
  r.Read("Timestamp", d.timestamp);
  r.Read("Canary", d.canary);
  r.Read("ModifyIndex", d.modify_index);
  if (!r.ok()) {
    return r.status();
  }
  return d;
}

absl::StatusOr<std::shared_ptr<const model::Job>> DecodeJobPtr(const Json& j,
                                                               const std::string& path) {
  absl::StatusOr<model::Job> job = internal::DecodeJob(j, path);
  if (!job.ok()) {
    return job.status();
  }
  return std::make_shared<const model::Job>(*std::move(job));
}

}  // namespace

Json ToJson(const model::AllocatedResources& res) {
  Json tasks = Json::object();
  for (const auto& [name, t] : res.tasks) {
    tasks[name] =
        Json{{"Cpu", Json{{"CpuShares", t.cpu_shares}, {"ReservedCores", nullptr}}},
             {"Memory", Json{{"MemoryMB", t.memory_mb}, {"MemoryMaxMB", t.memory_max_mb}}},
             {"Networks", NetworksOrNull(t.networks)},
             {"Devices", ListOrNull(t.devices, [](const model::AllocatedDeviceResource& d) {
                return Json{{"Vendor", d.vendor},
                            {"Type", d.type},
                            {"Name", d.name},
                            {"DeviceIDs", internal::StringListOrEmpty(d.device_ids)}};
              })}};
  }
  Json ports = ListOrNull(res.shared.ports, [](const model::AllocatedPortMapping& p) {
    return Json{{"Label", p.label}, {"Value", p.value}, {"To", p.to}, {"HostIP", p.host_ip}};
  });
  return Json{{"Tasks", std::move(tasks)},
              {"TaskLifecycles", nullptr},
              {"Shared", Json{{"DiskMB", res.shared.disk_mb},
                              {"Networks", NetworksOrNull(res.shared.networks)},
                              {"Ports", std::move(ports)}}}};
}

Json ToJson(const model::TaskEvent& e) {
  Json j = Json::object();
  j["Type"] = e.type;
  j["Time"] = e.time;
  j["Message"] = e.message;
  j["DisplayMessage"] = e.display_message;
  j["Details"] = internal::StringMapObject(e.details);
  j["FailsTask"] = e.fails_task;
  j["RestartReason"] = e.restart_reason;
  j["SetupError"] = e.setup_error;
  j["DriverError"] = e.driver_error;
  j["ExitCode"] = e.exit_code;
  j["Signal"] = e.signal;
  j["KillTimeout"] = DurationJson(e.kill_timeout);
  j["KillError"] = e.kill_error;
  j["KillReason"] = e.kill_reason;
  j["StartDelay"] = e.start_delay;
  j["DownloadError"] = e.download_error;
  j["ValidationError"] = e.validation_error;
  j["DiskLimit"] = 0;
  j["DiskSize"] = 0;
  j["FailedSibling"] = e.failed_sibling;
  j["VaultError"] = "";
  j["TaskSignalReason"] = e.task_signal_reason;
  j["TaskSignal"] = e.task_signal;
  j["DriverMessage"] = e.driver_message;
  j["GenericSource"] = e.generic_source;
  return j;
}

Json ToJson(const model::TaskState& s) {
  return Json{
      {"State", s.state},
      {"Failed", s.failed},
      {"Restarts", s.restarts},
      {"LastRestart", FormatTime(s.last_restart)},
      {"StartedAt", FormatTime(s.started_at)},
      {"FinishedAt", FormatTime(s.finished_at)},
      {"Events", ListOrEmpty(s.events, [](const model::TaskEvent& e) { return ToJson(e); })},
      {"Paused", ""},
      {"TaskHandle", nullptr}};
}

absl::StatusOr<model::TaskState> TaskStateFromJson(const Json& j) {
  return internal::NoThrow([&] { return internal::DecodeTaskState(j, "TaskState"); });
}

Json ToJson(const model::Allocation& a) {
  Json j = AllocJsonWithoutJob(a);
  j["Job"] = a.job ? ToJson(*a.job) : Json(nullptr);
  return j;
}

Json AllocJsonWithoutJob(const model::Allocation& a) {
  Json j = Json::object();
  j["ID"] = a.id;
  j["Namespace"] = a.namespace_;
  j["EvalID"] = a.eval_id;
  j["Name"] = a.name;
  j["NodeID"] = a.node_id;
  j["NodeName"] = a.node_name;
  j["JobID"] = a.job_id;
  j["TaskGroup"] = a.task_group;
  j["Resources"] = nullptr;
  j["TaskResources"] = nullptr;
  j["AllocatedResources"] = ToJson(a.allocated_resources);
  j["Services"] = nullptr;
  j["Metrics"] = AllocMetricJson(a.metrics);
  j["DesiredStatus"] = a.desired_status;
  j["DesiredDescription"] = a.desired_description;
  j["DesiredTransition"] = DesiredTransitionJson(a.desired_transition);
  j["ClientStatus"] = a.client_status;
  j["ClientDescription"] = a.client_description;
  j["TaskStates"] = TaskStatesJson(a.task_states);
  j["DeploymentID"] = a.deployment_id;
  j["DeploymentStatus"] = DeploymentStatusJson(a.deployment_status);
  j["FollowupEvalID"] = a.followup_eval_id;
  j["PreviousAllocation"] = a.previous_allocation;
  j["NextAllocation"] = a.next_allocation;
  j["RescheduleTracker"] = RescheduleTrackerJson(a.reschedule_tracker);
  j["NetworkStatus"] = nullptr;
  j["PreemptedAllocations"] = nullptr;
  j["PreemptedByAllocation"] = "";
  j["CreateIndex"] = a.create_index;
  j["ModifyIndex"] = a.modify_index;
  j["AllocModifyIndex"] = a.alloc_modify_index;
  j["CreateTime"] = a.create_time;
  j["ModifyTime"] = a.modify_time;
  return j;
}

Json AllocStubJson(const model::Allocation& a, bool include_task_states) {
  Json j = Json::object();
  j["ID"] = a.id;
  j["EvalID"] = a.eval_id;
  j["Name"] = a.name;
  j["Namespace"] = a.namespace_;
  j["NodeID"] = a.node_id;
  j["NodeName"] = a.node_name;
  j["JobID"] = a.job_id;
  j["JobType"] = a.job ? a.job->type : "";
  j["JobVersion"] = a.job ? a.job->version : 0;
  j["TaskGroup"] = a.task_group;
  // AllocatedResources only with ?resources=true (Nomad's omitempty).
  j["DesiredStatus"] = a.desired_status;
  j["DesiredDescription"] = a.desired_description;
  j["DesiredTransition"] = DesiredTransitionJson(a.desired_transition);
  j["ClientStatus"] = a.client_status;
  j["ClientDescription"] = a.client_description;
  j["TaskStates"] = include_task_states ? TaskStatesJson(a.task_states) : Json(nullptr);
  j["DeploymentID"] = a.deployment_id;
  j["DeploymentStatus"] = DeploymentStatusJson(a.deployment_status);
  j["FollowupEvalID"] = a.followup_eval_id;
  j["NextAllocation"] = a.next_allocation;
  j["RescheduleTracker"] = RescheduleTrackerJson(a.reschedule_tracker);
  j["PreemptedAllocations"] = nullptr;
  j["PreemptedByAllocation"] = "";
  j["CreateIndex"] = a.create_index;
  j["ModifyIndex"] = a.modify_index;
  j["CreateTime"] = a.create_time;
  j["ModifyTime"] = a.modify_time;
  return j;
}

absl::StatusOr<model::Allocation> AllocationFromJson(const Json& j) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::Allocation> {
    Reader r(j, "Allocation");
    model::Allocation a;
    if (!r.ExpectObject()) {
      return r.status();
    }
    r.Read("ID", a.id);
    r.Read("Namespace", a.namespace_);
    r.Read("EvalID", a.eval_id);
    r.Read("Name", a.name);
    r.Read("NodeID", a.node_id);
    r.Read("NodeName", a.node_name);
    r.Read("JobID", a.job_id);
    r.ReadObject("Job", a.job, DecodeJobPtr);
    r.Read("TaskGroup", a.task_group);
    r.ReadObject("AllocatedResources", a.allocated_resources, DecodeAllocatedResources);
    r.ReadObject("Metrics", a.metrics, DecodeAllocMetric);
    r.Read("DesiredStatus", a.desired_status);
    r.Read("DesiredDescription", a.desired_description);
    r.ReadObject("DesiredTransition", a.desired_transition, DecodeDesiredTransition);
    r.Read("ClientStatus", a.client_status);
    r.Read("ClientDescription", a.client_description);
    r.ReadMap("TaskStates", a.task_states, internal::DecodeTaskState);
    r.Read("DeploymentID", a.deployment_id);
    r.ReadOptional("DeploymentStatus", a.deployment_status, DecodeDeploymentStatus);
    r.Read("PreviousAllocation", a.previous_allocation);
    r.Read("NextAllocation", a.next_allocation);
    r.Read("FollowupEvalID", a.followup_eval_id);
    r.ReadOptional("RescheduleTracker", a.reschedule_tracker, DecodeRescheduleTracker);
    r.Read("CreateIndex", a.create_index);
    r.Read("ModifyIndex", a.modify_index);
    r.Read("AllocModifyIndex", a.alloc_modify_index);
    r.Read("CreateTime", a.create_time);
    r.Read("ModifyTime", a.modify_time);
    if (!r.ok()) {
      return r.status();
    }
    return a;
  });
}

Json ToJson(const model::AllocClientUpdate& u) {
  model::Allocation a;
  a.id = u.id;
  a.node_id = u.node_id;
  a.client_status = u.client_status;
  a.client_description = u.client_description;
  a.task_states = u.task_states;
  a.deployment_status = u.deployment_status;
  a.deployment_id = u.deployment_id;
  const Json full = ToJson(a);
  Json out = Json::object();
  for (const char* field : {"ID", "NodeID", "ClientStatus", "ClientDescription", "TaskStates",
                            "DeploymentStatus", "DeploymentID"}) {
    out[field] = full[field];
  }
  return out;
}

absl::StatusOr<model::AllocClientUpdate> AllocClientUpdateFromJson(const Json& j) {
  absl::StatusOr<model::Allocation> a = AllocationFromJson(j);
  if (!a.ok())
    return a.status();
  return model::AllocClientUpdate{.id = a->id,
                                  .node_id = a->node_id,
                                  .task_states = std::move(a->task_states),
                                  .client_status = std::move(a->client_status),
                                  .client_description = std::move(a->client_description),
                                  .deployment_status = std::move(a->deployment_status),
                                  .deployment_id = std::move(a->deployment_id)};
}

}  // namespace drover::codec
