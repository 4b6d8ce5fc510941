// Job list stubs, job summaries (with a template's children) and periodic launch
// records.
#include <string>

#include "codec/internal/json_util.h"
#include "codec/json.h"
#include "model/evaluation.h"

namespace drover::codec {

using internal::Reader;

namespace {

absl::StatusOr<model::TaskGroupSummary> DecodeGroupSummary(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::TaskGroupSummary s;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Queued", s.queued);
  r.Read("Complete", s.complete);
  r.Read("Failed", s.failed);
  r.Read("Running", s.running);
  r.Read("Starting", s.starting);
  r.Read("Lost", s.lost);
  r.Read("Unknown", s.unknown);
  if (!r.ok()) {
    return r.status();
  }
  return s;
}

}  // namespace

Json JobStubJson(const model::Job& job, const model::JobSummary* summary) {
  Json j = Json::object();
  j["ID"] = job.id;
  j["ParentID"] = job.parent_id;
  j["Name"] = job.name;
  j["Namespace"] = job.namespace_;
  j["Datacenters"] = internal::StringListOrEmpty(job.datacenters);
  j["NodePool"] = job.node_pool;
  j["Type"] = job.type;
  j["Priority"] = job.priority;
  j["Multiregion"] = nullptr;
  j["Periodic"] = job.IsPeriodic();
  j["ParameterizedJob"] = job.IsParameterized();
  j["Stop"] = job.stop;
  j["Status"] = job.status;
  j["StatusDescription"] = job.status_description;
  j["JobSummary"] = summary != nullptr ? ToJson(*summary) : Json(nullptr);
  j["CreateIndex"] = job.create_index;
  j["ModifyIndex"] = job.modify_index;
  j["JobModifyIndex"] = job.job_modify_index;
  j["SubmitTime"] = job.submit_time;
  return j;
}

Json ToJson(const model::JobSummary& s) {
  Json summary = Json::object();
  for (const auto& [group, g] : s.summary) {
    summary[group] = Json{{"Queued", g.queued},   {"Complete", g.complete}, {"Failed", g.failed},
                          {"Running", g.running}, {"Starting", g.starting}, {"Lost", g.lost},
                          {"Unknown", g.unknown}};
  }
  return Json{{"JobID", s.job_id},
              {"Namespace", s.namespace_},
              {"Summary", std::move(summary)},
              {"Children", Json{{"Pending", s.children.pending},
                                {"Running", s.children.running},
                                {"Dead", s.children.dead}}},
              {"CreateIndex", s.create_index},
              {"ModifyIndex", s.modify_index}};
}

absl::StatusOr<model::JobSummary> JobSummaryFromJson(const Json& j) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::JobSummary> {
    Reader r(j, "JobSummary");
    model::JobSummary s;
    if (!r.ExpectObject()) {
      return r.status();
    }
    r.Read("JobID", s.job_id);
    r.Read("Namespace", s.namespace_);
    r.ReadMap("Summary", s.summary, DecodeGroupSummary);
    r.ReadObject(
        "Children", s.children,
        [](const Json& c, const std::string& path) -> absl::StatusOr<model::JobChildrenSummary> {
          Reader cr(c, path);
          model::JobChildrenSummary children;
          if (!cr.ExpectObject())
            return cr.status();
          cr.Read("Pending", children.pending);
          cr.Read("Running", children.running);
          cr.Read("Dead", children.dead);
          if (!cr.ok())
            return cr.status();
          return children;
        });
    r.Read("CreateIndex", s.create_index);
    r.Read("ModifyIndex", s.modify_index);
    if (!r.ok()) {
      return r.status();
    }
    return s;
  });
}

Json ToJson(const model::PeriodicLaunch& launch) {
  return Json{{"Namespace", launch.namespace_},
              {"ID", launch.job_id},
              {"Launch", launch.launch},
              {"CreateIndex", launch.create_index},
              {"ModifyIndex", launch.modify_index}};
}

absl::StatusOr<model::PeriodicLaunch> PeriodicLaunchFromJson(const Json& j) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::PeriodicLaunch> {
    Reader r(j, "PeriodicLaunch");
    model::PeriodicLaunch out;
    if (!r.ExpectObject())
      return r.status();
    r.Read("Namespace", out.namespace_);
    r.Read("ID", out.job_id);
    r.Read("Launch", out.launch);
    r.Read("CreateIndex", out.create_index);
    r.Read("ModifyIndex", out.modify_index);
    if (!r.ok())
      return r.status();
    return out;
  });
}

}  // namespace drover::codec
