// Deployments (GET /v1/deployment/:id and the server state's record).
#include <nlohmann/json.hpp>

#include "codec/internal/json_util.h"
#include "codec/json.h"

namespace drover::codec {
namespace {

using internal::DurationJson;
using internal::Reader;

Json StateJson(const model::DeploymentState& s) {
  return {{"AutoRevert", s.auto_revert},
          {"AutoPromote", s.auto_promote},
          {"ProgressDeadline", DurationJson(s.progress_deadline)},
          {"RequireProgressBy", FormatTime(s.require_progress_by)},
          {"Promoted", s.promoted},
          {"PlacedCanaries", s.placed_canaries.empty() ? Json(nullptr) : Json(s.placed_canaries)},
          {"DesiredCanaries", s.desired_canaries},
          {"DesiredTotal", s.desired_total},
          {"PlacedAllocs", s.placed_allocs},
          {"HealthyAllocs", s.healthy_allocs},
          {"UnhealthyAllocs", s.unhealthy_allocs}};
}

absl::StatusOr<model::DeploymentState> DecodeState(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::DeploymentState s;
  if (!r.ExpectObject())
    return r.status();
  r.Read("AutoRevert", s.auto_revert);
  r.Read("AutoPromote", s.auto_promote);
  r.Read("ProgressDeadline", s.progress_deadline);
  r.Read("RequireProgressBy", s.require_progress_by);
  r.Read("Promoted", s.promoted);
  r.Read("PlacedCanaries", s.placed_canaries);
  r.Read("DesiredCanaries", s.desired_canaries);
  r.Read("DesiredTotal", s.desired_total);
  r.Read("PlacedAllocs", s.placed_allocs);
  r.Read("HealthyAllocs", s.healthy_allocs);
  r.Read("UnhealthyAllocs", s.unhealthy_allocs);
  if (!r.ok())
    return r.status();
  return s;
}

}  // namespace

Json ToJson(const model::Deployment& d) {
  Json groups = Json::object();
  for (const auto& [name, s] : d.task_groups)
    groups[name] = StateJson(s);
  return {{"ID", d.id},
          {"Namespace", d.namespace_},
          {"JobID", d.job_id},
          {"JobVersion", d.job_version},
          {"JobModifyIndex", d.job_modify_index},
          {"JobSpecModifyIndex", d.job_spec_modify_index},
          {"JobCreateIndex", d.job_create_index},
          {"IsMultiregion", false},
          {"TaskGroups", d.task_groups.empty() ? Json(nullptr) : std::move(groups)},
          {"Status", d.status},
          {"StatusDescription", d.status_description},
          {"EvalPriority", d.eval_priority},
          {"CreateIndex", d.create_index},
          {"ModifyIndex", d.modify_index},
          {"CreateTime", d.create_time},
          {"ModifyTime", d.modify_time}};
}

absl::StatusOr<model::Deployment> DeploymentFromJson(const Json& j) {
  Reader r(j, "Deployment");
  model::Deployment d;
  if (!r.ExpectObject())
    return r.status();
  r.Read("ID", d.id);
  r.Read("Namespace", d.namespace_);
  r.Read("JobID", d.job_id);
  r.Read("JobVersion", d.job_version);
  r.Read("JobModifyIndex", d.job_modify_index);
  r.Read("JobSpecModifyIndex", d.job_spec_modify_index);
  r.Read("JobCreateIndex", d.job_create_index);
  r.ReadMap("TaskGroups", d.task_groups, DecodeState);
  r.Read("Status", d.status);
  r.Read("StatusDescription", d.status_description);
  r.Read("EvalPriority", d.eval_priority);
  r.Read("CreateIndex", d.create_index);
  r.Read("ModifyIndex", d.modify_index);
  r.Read("CreateTime", d.create_time);
  r.Read("ModifyTime", d.modify_time);
  if (!r.ok())
    return r.status();
  return d;
}

}  // namespace drover::codec
