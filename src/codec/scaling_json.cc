// Scaling events and policies (POST/GET /v1/job/:id/scale, /v1/scaling/policies).
#include <nlohmann/json.hpp>

#include "codec/internal/json_util.h"
#include "codec/internal/model_json.h"
#include "codec/json.h"

namespace drover::codec {
namespace {

using internal::Reader;

absl::StatusOr<model::ScalingEvent> DecodeScalingEvent(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::ScalingEvent e;
  if (!r.ExpectObject())
    return r.status();
  r.Read("Time", e.time);
  if (const Json* count = r.Get("Count"); count != nullptr && !count->is_null()) {
    int64_t n = 0;
    r.Read("Count", n);
    e.count = n;
  }
  r.Read("PreviousCount", e.previous_count);
  r.Read("Message", e.message);
  r.Read("Error", e.error);
  r.ReadMap("Meta", e.meta, [](const Json& v, const std::string&) -> absl::StatusOr<model::Value> {
    return ValueFromJson(v);
  });
  r.Read("EvalID", e.eval_id);
  r.Read("CreateIndex", e.create_index);
  if (!r.ok())
    return r.status();
  return e;
}

Json Target(const model::Job& job, const model::TaskGroup& group) {
  return {{"Namespace", job.namespace_}, {"Job", job.id}, {"Group", group.name}};
}

}  // namespace

Json ToJson(const model::ScalingEvent& e) {
  Json meta = Json::object();
  for (const auto& [k, v] : e.meta)
    meta[k] = ToJson(v);
  return {{"Time", e.time},
          {"Count", e.count ? Json(*e.count) : Json(nullptr)},
          {"PreviousCount", e.previous_count},
          {"Message", e.message},
          {"Error", e.error},
          {"Meta", e.meta.empty() ? Json(nullptr) : std::move(meta)},
          {"EvalID", e.eval_id.empty() ? Json(nullptr) : Json(e.eval_id)},
          {"CreateIndex", e.create_index}};
}

Json ToJson(const model::JobScalingEvents& events) {
  Json groups = Json::object();
  for (const auto& [group, list] : events.events) {
    Json out = Json::array();
    for (const model::ScalingEvent& e : list)
      out.push_back(ToJson(e));
    groups[group] = std::move(out);
  }
  return {{"Namespace", events.namespace_},
          {"JobID", events.job_id},
          {"ScalingEvents", std::move(groups)},
          {"ModifyIndex", events.modify_index}};
}

absl::StatusOr<model::JobScalingEvents> JobScalingEventsFromJson(const Json& j) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::JobScalingEvents> {
    Reader r(j, "JobScalingEvents");
    model::JobScalingEvents out;
    if (!r.ExpectObject())
      return r.status();
    r.Read("Namespace", out.namespace_);
    r.Read("JobID", out.job_id);
    r.ReadMap("ScalingEvents", out.events,
              [](const Json& list,
                 const std::string& path) -> absl::StatusOr<std::vector<model::ScalingEvent>> {
                const Json wrapped = {{"List", list}};  // Reader keeps a reference
                Reader lr(wrapped, path);
                std::vector<model::ScalingEvent> events;
                lr.ReadList("List", events, DecodeScalingEvent);
                if (!lr.ok())
                  return lr.status();
                return events;
              });
    r.Read("ModifyIndex", out.modify_index);
    if (!r.ok())
      return r.status();
    return out;
  });
}

Json ScalingPolicyJson(const model::Job& job, const model::TaskGroup& group) {
  const model::ScalingPolicy& s = *group.scaling;
  return {{"ID", s.id},
          {"Namespace", job.namespace_},
          {"Type", s.type},
          {"Target", Target(job, group)},
          {"Policy", ToJson(s.policy)},
          {"Min", s.min},
          {"Max", s.max},
          {"Enabled", s.enabled},
          {"CreateIndex", s.create_index},
          {"ModifyIndex", s.modify_index}};
}

Json ScalingPolicyStubJson(const model::Job& job, const model::TaskGroup& group) {
  const model::ScalingPolicy& s = *group.scaling;
  return {{"ID", s.id},
          {"Enabled", s.enabled},
          {"Type", s.type},
          {"Target", Target(job, group)},
          {"CreateIndex", s.create_index},
          {"ModifyIndex", s.modify_index}};
}

}  // namespace drover::codec
