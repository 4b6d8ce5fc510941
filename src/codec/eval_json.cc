// Evaluations.
#include <string>

#include "codec/internal/json_util.h"
#include "codec/internal/model_json.h"
#include "codec/json.h"

namespace drover::codec {

Json ToJson(const model::Evaluation& e) {
  Json j = Json::object();
  j["ID"] = e.id;
  j["Priority"] = e.priority;
  j["Type"] = e.type;
  j["TriggeredBy"] = e.triggered_by;
  j["Namespace"] = e.namespace_;
  j["JobID"] = e.job_id;
  j["JobModifyIndex"] = e.job_modify_index;
  j["NodeID"] = e.node_id;
  j["NodeModifyIndex"] = e.node_modify_index;
  j["DeploymentID"] = e.deployment_id;
  j["Status"] = e.status;
  j["StatusDescription"] = e.status_description;
  j["Wait"] = 0;
  j["WaitUntil"] = FormatTime(e.wait_until);
  j["NextEval"] = e.next_eval;
  j["PreviousEval"] = e.previous_eval;
  j["BlockedEval"] = e.blocked_eval;
  j["RelatedEvals"] = nullptr;
  j["FailedTGAllocs"] = internal::MapOrNull(e.failed_tg_allocs, internal::AllocMetricJson);
  j["ClassEligibility"] = nullptr;
  j["EscapedComputedClass"] = false;
  j["QuotaLimitReached"] = "";
  j["AnnotatePlan"] = false;
  Json queued = Json::object();
  for (const auto& [group, n] : e.queued_allocations) {
    queued[group] = n;
  }
  // Null until a scheduler pass set it, as Nomad's map.
  j["QueuedAllocations"] = queued.empty() ? Json(nullptr) : std::move(queued);
  j["LeaderACL"] = "";
  j["SnapshotIndex"] = e.snapshot_index;
  j["CreateIndex"] = e.create_index;
  j["ModifyIndex"] = e.modify_index;
  j["CreateTime"] = e.create_time;
  j["ModifyTime"] = e.modify_time;
  return j;
}

absl::StatusOr<model::Evaluation> EvaluationFromJson(const Json& j) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::Evaluation> {
    internal::Reader r(j, "Evaluation");
    model::Evaluation e;
    if (!r.ExpectObject()) {
      return r.status();
    }
    r.Read("ID", e.id);
    r.Read("Priority", e.priority);
    r.Read("Type", e.type);
    r.Read("TriggeredBy", e.triggered_by);
    r.Read("Namespace", e.namespace_);
    r.Read("JobID", e.job_id);
    r.Read("JobModifyIndex", e.job_modify_index);
    r.Read("NodeID", e.node_id);
    r.Read("NodeModifyIndex", e.node_modify_index);
    r.Read("DeploymentID", e.deployment_id);
    r.Read("Status", e.status);
    r.Read("StatusDescription", e.status_description);
    r.Read("NextEval", e.next_eval);
    r.Read("PreviousEval", e.previous_eval);
    r.Read("BlockedEval", e.blocked_eval);
    r.ReadMap("FailedTGAllocs", e.failed_tg_allocs, internal::DecodeAllocMetric);
    r.Read("QueuedAllocations", e.queued_allocations);
    r.Read("SnapshotIndex", e.snapshot_index);
    r.Read("WaitUntil", e.wait_until);
    r.Read("CreateIndex", e.create_index);
    r.Read("ModifyIndex", e.modify_index);
    r.Read("CreateTime", e.create_time);
    r.Read("ModifyTime", e.modify_time);
    if (!r.ok()) {
      return r.status();
    }
    return e;
  });
}

}  // namespace drover::codec
