// Jobs, task groups, tasks and their parts (job list stubs, summaries and launch records
// are in job_summary_json.cc).
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "absl/strings/escaping.h"

#include "codec/internal/json_util.h"
#include "codec/internal/model_json.h"
#include "codec/json.h"
#include "model/evaluation.h"

namespace drover::codec {

using internal::DurationJson;
using internal::ListOrEmpty;
using internal::ListOrNull;
using internal::Reader;
using internal::StringMapOrNull;

namespace internal {

// --- Constraints and networks (shared with allocations and nodes) ---

Json ConstraintJson(const model::Constraint& c) {
  return Json{{"LTarget", c.ltarget}, {"RTarget", c.rtarget}, {"Operand", c.operand}};
}

absl::StatusOr<model::Constraint> DecodeConstraint(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Constraint c;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("LTarget", c.ltarget);
  r.Read("RTarget", c.rtarget);
  r.Read("Operand", c.operand);
  if (!r.ok()) {
    return r.status();
  }
  return c;
}

Json ConstraintsOrNull(const std::vector<model::Constraint>& cs) {
  return ListOrNull(cs, ConstraintJson);
}

Json PortJson(const model::Port& p) {
  return Json{
      {"Label", p.label}, {"Value", p.value}, {"To", p.to}, {"HostNetwork", p.host_network}};
}

absl::StatusOr<model::Port> DecodePort(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Port p;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Label", p.label);
  r.Read("Value", p.value);
  r.Read("To", p.to);
  r.Read("HostNetwork", p.host_network);
  if (!r.ok()) {
    return r.status();
  }
  return p;
}

Json NetworkJson(const model::NetworkResource& n) {
  return Json{{"Mode", n.mode},
              {"Device", n.device},
              {"CIDR", n.cidr},
              {"IP", n.ip},
              {"Hostname", ""},
              {"MBits", n.mbits},
              {"DNS", nullptr},
              {"ReservedPorts", ListOrNull(n.reserved_ports, PortJson)},
              {"DynamicPorts", ListOrNull(n.dynamic_ports, PortJson)}};
}

absl::StatusOr<model::NetworkResource> DecodeNetwork(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::NetworkResource n;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Mode", n.mode);
  r.Read("Device", n.device);
  r.Read("CIDR", n.cidr);
  r.Read("IP", n.ip);
  r.Read("MBits", n.mbits);
  r.ReadList("ReservedPorts", n.reserved_ports, DecodePort);
  r.ReadList("DynamicPorts", n.dynamic_ports, DecodePort);
  if (!r.ok()) {
    return r.status();
  }
  return n;
}

Json NetworksOrNull(const std::vector<model::NetworkResource>& ns) {
  return ListOrNull(ns, NetworkJson);
}

}  // namespace internal

namespace {

using internal::ConstraintsOrNull;
using internal::DecodeConstraint;
using internal::DecodeNetwork;
using internal::NetworksOrNull;

// --- Encoders ---

Json RestartPolicyJson(const model::RestartPolicy& p) {
  return Json{{"Attempts", p.attempts},
              {"Interval", DurationJson(p.interval)},
              {"Delay", DurationJson(p.delay)},
              {"Mode", p.mode},
              {"RenderTemplates", p.render_templates}};
}

Json ReschedulePolicyJson(const model::ReschedulePolicy& p) {
  return Json{{"Attempts", p.attempts},
              {"Interval", DurationJson(p.interval)},
              {"Delay", DurationJson(p.delay)},
              {"DelayFunction", p.delay_function},
              {"MaxDelay", DurationJson(p.max_delay)},
              {"Unlimited", p.unlimited}};
}

Json MigrateJson(const model::MigrateStrategy& m) {
  auto duration = [](model::Duration d) {
    return d == model::MigrateStrategy::kUnsetDuration ? Json() : DurationJson(d);
  };
  return Json{
      {"MaxParallel",
       m.max_parallel == model::MigrateStrategy::kUnsetMaxParallel ? Json() : Json(m.max_parallel)},
      {"HealthCheck", m.health_check},
      {"MinHealthyTime", duration(m.min_healthy_time)},
      {"HealthyDeadline", duration(m.healthy_deadline)}};
}

Json UpdateJson(const model::UpdateStrategy& u) {
  using U = model::UpdateStrategy;
  auto duration = [](model::Duration d) {
    return d == U::kUnsetDuration ? Json() : DurationJson(d);
  };
  auto integer = [](int v) { return v == U::kUnsetInt ? Json() : Json(v); };
  return Json{{"Stagger", duration(u.stagger)},
              {"MaxParallel", integer(u.max_parallel)},
              {"HealthCheck", u.health_check},
              {"MinHealthyTime", duration(u.min_healthy_time)},
              {"HealthyDeadline", duration(u.healthy_deadline)},
              {"ProgressDeadline", duration(u.progress_deadline)},
              {"Canary", integer(u.canary)},
              {"AutoRevert", u.auto_revert},
              {"AutoPromote", u.auto_promote}};
}

Json AffinitiesOrNull(const std::vector<model::Affinity>& as) {
  return ListOrNull(as, [](const model::Affinity& a) {
    return Json{{"LTarget", a.ltarget},
                {"RTarget", a.rtarget},
                {"Operand", a.operand},
                {"Weight", a.weight}};
  });
}

Json DeviceJson(const model::RequestedDevice& d) {
  return Json{{"Name", d.name},
              {"Count", d.count},
              {"Constraints", ConstraintsOrNull(d.constraints)},
              {"Affinities", AffinitiesOrNull(d.affinities)}};
}

Json ResourcesJson(const model::Resources& r) {
  return Json{{"CPU", r.cpu},
              {"Cores", r.cores},
              {"MemoryMB", r.memory_mb},
              {"MemoryMaxMB", r.memory_max_mb},
              {"DiskMB", r.disk_mb},
              {"Networks", NetworksOrNull(r.networks)},
              {"Devices", ListOrNull(r.devices, DeviceJson)},
              {"NUMA", nullptr}};
}

Json TaskJson(const model::Task& t) {
  Json j = Json::object();
  j["Name"] = t.name;
  j["Driver"] = t.driver;
  j["User"] = t.user;
  j["Lifecycle"] =
      t.lifecycle ? Json{{"Hook", t.lifecycle->hook}, {"Sidecar", t.lifecycle->sidecar}} : Json();
  j["Config"] = ToJson(t.config);
  j["Constraints"] = ConstraintsOrNull(t.constraints);
  j["Affinities"] = nullptr;
  j["Env"] = StringMapOrNull(t.env);
  j["Services"] = nullptr;
  j["Resources"] = ResourcesJson(t.resources);
  j["RestartPolicy"] = t.restart_policy ? RestartPolicyJson(*t.restart_policy) : Json();
  j["Meta"] = StringMapOrNull(t.meta);
  j["KillTimeout"] = DurationJson(t.kill_timeout);
  j["LogConfig"] = Json{{"MaxFiles", t.log_config.max_files},
                        {"MaxFileSizeMB", t.log_config.max_file_size_mb},
                        {"Disabled", t.log_config.disabled}};
  j["Artifacts"] = nullptr;
  j["Vault"] = nullptr;
  j["Templates"] = nullptr;
  j["DispatchPayload"] =
      t.dispatch_payload ? Json{{"File", t.dispatch_payload->file}} : Json(nullptr);
  j["VolumeMounts"] = nullptr;
  j["Leader"] = t.leader;
  j["ShutdownDelay"] = DurationJson(t.shutdown_delay);
  j["KillSignal"] = t.kill_signal;
  j["Kind"] = "";
  j["ScalingPolicies"] = nullptr;
  j["Identity"] = nullptr;
  j["Identities"] = nullptr;
  return j;
}

Json ScalingPolicyJson(const model::ScalingPolicy& s) {
  Json j = Json::object();
  j["ID"] = s.id;
  j["Type"] = s.type;
  j["Target"] = nullptr;  // filled in with the job (ToJson(Job))
  j["Min"] = s.min == model::ScalingPolicy::kUnset ? Json(nullptr) : Json(s.min);
  j["Max"] = s.max == model::ScalingPolicy::kUnset ? Json(nullptr) : Json(s.max);
  j["Policy"] = ToJson(s.policy);
  j["Enabled"] = s.enabled;
  j["CreateIndex"] = s.create_index;
  j["ModifyIndex"] = s.modify_index;
  return j;
}

Json TaskGroupJson(const model::TaskGroup& g) {
  Json j = Json::object();
  j["Name"] = g.name;
  // The decoder's "unset" marker; Nomad's api has a null count there.
  j["Count"] = g.count == model::TaskGroup::kUnsetCount ? Json(nullptr) : Json(g.count);
  j["Constraints"] = ConstraintsOrNull(g.constraints);
  j["Affinities"] = nullptr;
  j["Tasks"] = ListOrEmpty(g.tasks, TaskJson);
  j["Spreads"] = nullptr;
  j["Volumes"] = nullptr;
  j["RestartPolicy"] = g.restart_policy ? RestartPolicyJson(*g.restart_policy) : Json();
  j["ReschedulePolicy"] = g.reschedule_policy ? ReschedulePolicyJson(*g.reschedule_policy) : Json();
  j["EphemeralDisk"] = g.ephemeral_disk ? Json{{"Sticky", g.ephemeral_disk->sticky},
                                               {"Migrate", g.ephemeral_disk->migrate},
                                               {"SizeMB", g.ephemeral_disk->size_mb}}
                                        : Json();
  j["Update"] = g.update ? UpdateJson(*g.update) : Json();
  j["Migrate"] = g.migrate ? MigrateJson(*g.migrate) : Json();
  j["Networks"] = NetworksOrNull(g.networks);
  j["Meta"] = StringMapOrNull(g.meta);
  j["Services"] = nullptr;
  j["ShutdownDelay"] = g.shutdown_delay ? Json(g.shutdown_delay->count()) : Json();
  j["StopAfterClientDisconnect"] = nullptr;
  j["MaxClientDisconnect"] =
      g.max_client_disconnect ? Json(g.max_client_disconnect->count()) : Json();
  j["Disconnect"] = nullptr;
  j["Scaling"] = g.scaling ? ScalingPolicyJson(*g.scaling) : Json();
  j["Consul"] = nullptr;
  return j;
}

// --- Decoders ---

absl::StatusOr<model::RestartPolicy> DecodeRestartPolicy(const Json& j, const std::string& path) {
  Reader r(j, path);
  // Fields left out stay "unset" so that canonicalization fills them from the defaults
  // (of the job type for a group, of the group for a task), as Nomad merges a partial
  // policy.
  model::RestartPolicy p{.attempts = model::RestartPolicy::kUnsetAttempts,
                         .interval = model::RestartPolicy::kUnsetDuration,
                         .delay = model::RestartPolicy::kUnsetDuration};
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Attempts", p.attempts);
  r.Read("Interval", p.interval);
  r.Read("Delay", p.delay);
  r.Read("Mode", p.mode);
  r.Read("RenderTemplates", p.render_templates);
  if (!r.ok()) {
    return r.status();
  }
  return p;
}

absl::StatusOr<model::ReschedulePolicy> DecodeReschedulePolicy(const Json& j,
                                                               const std::string& path) {
  Reader r(j, path);
  model::ReschedulePolicy p;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Attempts", p.attempts);
  r.Read("Interval", p.interval);
  r.Read("Delay", p.delay);
  r.Read("DelayFunction", p.delay_function);
  r.Read("MaxDelay", p.max_delay);
  r.Read("Unlimited", p.unlimited);
  if (!r.ok()) {
    return r.status();
  }
  return p;
}

absl::StatusOr<model::EphemeralDisk> DecodeEphemeralDisk(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::EphemeralDisk d;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Sticky", d.sticky);
  r.Read("Migrate", d.migrate);
  r.Read("SizeMB", d.size_mb);
  if (!r.ok()) {
    return r.status();
  }
  return d;
}

absl::StatusOr<model::MigrateStrategy> DecodeMigrate(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::MigrateStrategy m;  // fields left out stay unset until canonicalization
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("MaxParallel", m.max_parallel);
  r.Read("HealthCheck", m.health_check);
  r.Read("MinHealthyTime", m.min_healthy_time);
  r.Read("HealthyDeadline", m.healthy_deadline);
  if (!r.ok()) {
    return r.status();
  }
  return m;
}

absl::StatusOr<model::UpdateStrategy> DecodeUpdate(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::UpdateStrategy u;  // fields left out stay unset until canonicalization
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Stagger", u.stagger);
  r.Read("MaxParallel", u.max_parallel);
  r.Read("HealthCheck", u.health_check);
  r.Read("MinHealthyTime", u.min_healthy_time);
  r.Read("HealthyDeadline", u.healthy_deadline);
  r.Read("ProgressDeadline", u.progress_deadline);
  r.Read("Canary", u.canary);
  r.Read("AutoRevert", u.auto_revert);
  r.Read("AutoPromote", u.auto_promote);
  if (!r.ok()) {
    return r.status();
  }
  return u;
}

absl::StatusOr<model::LogConfig> DecodeLogConfig(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::LogConfig c;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("MaxFiles", c.max_files);
  r.Read("MaxFileSizeMB", c.max_file_size_mb);
  r.Read("Disabled", c.disabled);
  if (!r.ok()) {
    return r.status();
  }
  return c;
}

absl::StatusOr<model::Lifecycle> DecodeLifecycle(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Lifecycle l;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Hook", l.hook);
  r.Read("Sidecar", l.sidecar);
  if (!r.ok()) {
    return r.status();
  }
  return l;
}

absl::StatusOr<model::DispatchPayloadConfig> DecodeDispatchPayload(const Json& j,
                                                                   const std::string& path) {
  Reader r(j, path);
  model::DispatchPayloadConfig d;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("File", d.file);
  if (!r.ok()) {
    return r.status();
  }
  return d;
}

absl::StatusOr<model::Affinity> DecodeAffinity(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Affinity a;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("LTarget", a.ltarget);
  r.Read("RTarget", a.rtarget);
  r.Read("Operand", a.operand);
  r.Read("Weight", a.weight);
  if (!r.ok()) {
    return r.status();
  }
  return a;
}

absl::StatusOr<model::RequestedDevice> DecodeDevice(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::RequestedDevice d;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Name", d.name);
  r.Read("Count", d.count);
  r.ReadList("Constraints", d.constraints, DecodeConstraint);
  r.ReadList("Affinities", d.affinities, DecodeAffinity);
  if (!r.ok()) {
    return r.status();
  }
  return d;
}

absl::StatusOr<model::Resources> DecodeResources(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Resources res;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("CPU", res.cpu);
  r.Read("Cores", res.cores);
  r.Read("MemoryMB", res.memory_mb);
  r.Read("MemoryMaxMB", res.memory_max_mb);
  r.Read("DiskMB", res.disk_mb);
  r.ReadList("Networks", res.networks, DecodeNetwork);
  r.ReadList("Devices", res.devices, DecodeDevice);
  if (!r.ok()) {
    return r.status();
  }
  return res;
}

absl::StatusOr<model::Task> DecodeTask(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::Task t;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Name", t.name);
  r.Read("Driver", t.driver);
  r.Read("User", t.user);
  r.ReadOptional("Lifecycle", t.lifecycle, DecodeLifecycle);
  if (const Json* config = r.Get("Config"); config != nullptr && !config->is_object()) {
    r.Fail(internal::TypeError(r.Path("Config"), "object", *config));
  }
  r.Read("Config", t.config);
  r.ReadList("Constraints", t.constraints, DecodeConstraint);
  r.Read("Env", t.env);
  r.ReadObject("Resources", t.resources, DecodeResources);
  r.ReadOptional("RestartPolicy", t.restart_policy, DecodeRestartPolicy);
  r.Read("Meta", t.meta);
  r.Read("KillTimeout", t.kill_timeout);
  r.ReadObject("LogConfig", t.log_config, DecodeLogConfig);
  r.ReadOptional("DispatchPayload", t.dispatch_payload, DecodeDispatchPayload);
  r.Read("Leader", t.leader);
  r.Read("ShutdownDelay", t.shutdown_delay);
  r.Read("KillSignal", t.kill_signal);
  if (!r.ok()) {
    return r.status();
  }
  return t;
}

absl::StatusOr<model::ScalingPolicy> DecodeScalingPolicy(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::ScalingPolicy s;
  if (!r.ExpectObject())
    return r.status();
  r.Read("ID", s.id);
  s.type.clear();  // canonicalization defaults it
  r.Read("Type", s.type);
  r.Read("Min", s.min);
  r.Read("Max", s.max);
  r.Read("Enabled", s.enabled);
  r.Read("Policy", s.policy);
  if (s.policy.is_null())
    s.policy = model::Value::Object{};
  r.Read("CreateIndex", s.create_index);
  r.Read("ModifyIndex", s.modify_index);
  if (!r.ok())
    return r.status();
  if (!s.policy.is_object())
    return absl::InvalidArgumentError(absl::StrCat(r.Path("Policy"), ": expected an object"));
  return s;
}

Json PeriodicJson(const model::PeriodicConfig& p) {
  return Json{{"Enabled", p.enabled},
              {"Spec", p.spec},
              {"Specs", p.specs.empty() ? Json(nullptr) : Json(p.specs)},
              {"SpecType", p.spec_type},
              {"ProhibitOverlap", p.prohibit_overlap},
              {"TimeZone", p.time_zone}};
}

absl::StatusOr<model::PeriodicConfig> DecodePeriodic(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::PeriodicConfig p;  // Enabled unless sent false (Nomad's api Canonicalize)
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Enabled", p.enabled);
  r.Read("Spec", p.spec);
  r.Read("Specs", p.specs);
  r.Read("SpecType", p.spec_type);
  r.Read("ProhibitOverlap", p.prohibit_overlap);
  r.Read("TimeZone", p.time_zone);
  if (!r.ok()) {
    return r.status();
  }
  return p;
}

Json ParameterizedJson(const model::ParameterizedJobConfig& p) {
  return Json{{"Payload", p.payload},
              {"MetaRequired", p.meta_required.empty() ? Json(nullptr) : Json(p.meta_required)},
              {"MetaOptional", p.meta_optional.empty() ? Json(nullptr) : Json(p.meta_optional)}};
}

absl::StatusOr<model::ParameterizedJobConfig> DecodeParameterized(const Json& j,
                                                                  const std::string& path) {
  Reader r(j, path);
  model::ParameterizedJobConfig p;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Payload", p.payload);
  r.Read("MetaRequired", p.meta_required);
  r.Read("MetaOptional", p.meta_optional);
  if (!r.ok()) {
    return r.status();
  }
  return p;
}

absl::StatusOr<model::TaskGroup> DecodeTaskGroup(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::TaskGroup g;
  g.count = model::TaskGroup::kUnsetCount;  // until CanonicalizeJob
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Name", g.name);
  r.Read("Count", g.count);
  // The sentinel is for an absent count only: a count sent as its value is negative.
  if (r.Get("Count") != nullptr && g.count == model::TaskGroup::kUnsetCount)
    g.count = -1;
  r.ReadList("Constraints", g.constraints, DecodeConstraint);
  r.ReadList("Tasks", g.tasks, DecodeTask);
  r.ReadOptional("RestartPolicy", g.restart_policy, DecodeRestartPolicy);
  r.ReadOptional("ReschedulePolicy", g.reschedule_policy, DecodeReschedulePolicy);
  r.ReadOptional("EphemeralDisk", g.ephemeral_disk, DecodeEphemeralDisk);
  r.ReadOptional("Migrate", g.migrate, DecodeMigrate);
  r.ReadOptional("Update", g.update, DecodeUpdate);
  r.ReadList("Networks", g.networks, DecodeNetwork);
  r.Read("Meta", g.meta);
  r.Read("ShutdownDelay", g.shutdown_delay);
  r.Read("MaxClientDisconnect", g.max_client_disconnect);
  r.ReadOptional("Scaling", g.scaling, DecodeScalingPolicy);
  if (!r.ok()) {
    return r.status();
  }
  return g;
}

// A job-level Reschedule, Migrate or Update applies to every group, under the group's
// own fields (as Nomad merges them): folded into the groups of one copy of the job
// before they are decoded. Nothing when the job has none.
std::optional<Json> FoldJobLevelPolicies(const Json& j) {
  static constexpr std::array<std::pair<const char*, const char*>, 3> kPolicies = {
      std::pair{"Reschedule", "ReschedulePolicy"}, std::pair{"Migrate", "Migrate"},
      std::pair{"Update", "Update"}};
  if (!j.is_object() || !j.contains("TaskGroups") || !j["TaskGroups"].is_array())
    return std::nullopt;
  auto present = [&](const char* key) { return j.contains(key) && j[key].is_object(); };
  if (std::none_of(kPolicies.begin(), kPolicies.end(),
                   [&](const auto& p) { return present(p.first); }))
    return std::nullopt;
  Json merged = j;
  for (const auto& [job_key, group_key] : kPolicies) {
    if (!present(job_key))
      continue;
    for (Json& group : merged["TaskGroups"]) {
      if (!group.is_object())
        continue;
      Json policy = j[job_key];
      if (group.contains(group_key) && group[group_key].is_object()) {
        for (auto it = group[group_key].begin(); it != group[group_key].end(); ++it) {
          if (!it->is_null())
            policy[it.key()] = *it;
        }
      }
      group[group_key] = std::move(policy);
    }
    merged.erase(job_key);
  }
  return merged;
}

}  // namespace

namespace internal {

absl::StatusOr<model::Job> DecodeJob(const Json& j, const std::string& path) {
  if (std::optional<Json> folded = FoldJobLevelPolicies(j))
    return DecodeJob(*folded, path);  // once: the copy has no job-level policies left
  Reader r(j, path);
  model::Job job;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Region", job.region);
  r.Read("Namespace", job.namespace_);
  r.Read("ID", job.id);
  r.Read("Name", job.name);
  r.Read("Type", job.type);
  r.Read("Priority", job.priority);
  r.Read("AllAtOnce", job.all_at_once);
  r.Read("Datacenters", job.datacenters);
  r.Read("NodePool", job.node_pool);
  r.ReadList("Constraints", job.constraints, DecodeConstraint);
  r.ReadList("TaskGroups", job.task_groups, DecodeTaskGroup);
  r.Read("Meta", job.meta);
  r.Read("Stop", job.stop);
  r.ReadOptional("Periodic", job.periodic, DecodePeriodic);
  r.ReadOptional("ParameterizedJob", job.parameterized, DecodeParameterized);
  r.Read("ParentID", job.parent_id);
  r.Read("Dispatched", job.dispatched);
  r.Read("DispatchIdempotencyToken", job.dispatch_idempotency_token);
  std::string payload;
  r.Read("Payload", payload);
  if (r.ok() && !payload.empty() && !absl::Base64Unescape(payload, &job.payload)) {
    r.Fail(absl::InvalidArgumentError(absl::StrCat(r.Path("Payload"), ": invalid base64")));
  }
  r.Read("Status", job.status);
  r.Read("StatusDescription", job.status_description);
  r.Read("Stable", job.stable);
  r.Read("Version", job.version);
  r.Read("SubmitTime", job.submit_time);
  r.Read("CreateIndex", job.create_index);
  r.Read("ModifyIndex", job.modify_index);
  r.Read("JobModifyIndex", job.job_modify_index);
  if (!r.ok()) {
    return r.status();
  }
  return job;
}

}  // namespace internal

Json ToJson(const model::Job& job) {
  Json j = Json::object();
  j["Region"] = job.region;
  j["Namespace"] = job.namespace_;
  j["ID"] = job.id;
  j["Name"] = job.name;
  j["Type"] = job.type;
  j["Priority"] = job.priority;
  j["AllAtOnce"] = job.all_at_once;
  j["Datacenters"] = internal::StringListOrEmpty(job.datacenters);
  j["NodePool"] = job.node_pool;
  j["Constraints"] = ConstraintsOrNull(job.constraints);
  j["Affinities"] = nullptr;
  j["TaskGroups"] = ListOrEmpty(job.task_groups, TaskGroupJson);
  j["Update"] = nullptr;
  j["Multiregion"] = nullptr;
  j["Spreads"] = nullptr;
  j["Periodic"] = job.periodic ? PeriodicJson(*job.periodic) : Json(nullptr);
  j["ParameterizedJob"] = job.parameterized ? ParameterizedJson(*job.parameterized) : Json(nullptr);
  j["Reschedule"] = nullptr;
  j["Migrate"] = nullptr;
  j["Meta"] = StringMapOrNull(job.meta);
  j["UI"] = nullptr;
  j["Stop"] = job.stop;
  j["ParentID"] = job.parent_id;
  j["Dispatched"] = job.dispatched;
  j["DispatchIdempotencyToken"] =
      job.dispatch_idempotency_token.empty() ? Json(nullptr) : Json(job.dispatch_idempotency_token);
  j["Payload"] = job.payload.empty() ? Json(nullptr) : Json(absl::Base64Escape(job.payload));
  j["ConsulNamespace"] = nullptr;
  j["VaultNamespace"] = nullptr;
  j["NomadTokenID"] = nullptr;
  j["Status"] = job.status;
  j["StatusDescription"] = job.status_description;
  j["Stable"] = job.stable;
  j["Version"] = job.version;
  j["SubmitTime"] = job.submit_time;
  j["CreateIndex"] = job.create_index;
  j["ModifyIndex"] = job.modify_index;
  j["JobModifyIndex"] = job.job_modify_index;
  j["VersionTag"] = nullptr;
  // A scaling policy's target is its job's group.
  for (Json& g : j["TaskGroups"]) {
    if (g["Scaling"].is_object()) {
      g["Scaling"]["Target"] = {
          {"Namespace", job.namespace_}, {"Job", job.id}, {"Group", g["Name"]}};
      g["Scaling"]["Namespace"] = job.namespace_;
    }
  }
  return j;
}

absl::StatusOr<model::Job> JobFromJson(const Json& j) {
  return internal::NoThrow([&] { return internal::DecodeJob(j, "Job"); });
}

}  // namespace drover::codec
