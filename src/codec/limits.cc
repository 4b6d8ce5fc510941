#include "codec/limits.h"

#include <variant>

#include "absl/strings/str_cat.h"

#include "model/value.h"

namespace drover::codec {

namespace {

using Errors = std::vector<std::string>;
using L = JobLimits;

void Size(const std::string& what, size_t n, size_t max, Errors& errs) {
  if (n > max)
    errs.push_back(absl::StrCat(what, ": ", n, " is more than the limit of ", max));
}

void Name(const std::string& what, const std::string& name, Errors& errs) {
  if (name.size() > L::kMaxNameBytes) {
    errs.push_back(
        absl::StrCat(what, " is ", name.size(), " bytes long; the limit is ", L::kMaxNameBytes));
  }
}

// Any other string a job carries (a constraint's targets, a driver, a user, a label...).
void Text(const std::string& what, const std::string& s, Errors& errs) {
  if (s.size() > L::kMaxStringBytes) {
    errs.push_back(
        absl::StrCat(what, " is ", s.size(), " bytes long; the limit is ", L::kMaxStringBytes));
  }
}

void Number(const std::string& what, int64_t v, int64_t max, Errors& errs) {
  if (v > max)
    errs.push_back(absl::StrCat(what, " ", v, " is above the limit of ", max));
}

void Time(const std::string& what, model::Duration d, Errors& errs) {
  if (d > L::kMaxDuration)
    errs.push_back(absl::StrCat(what, " is longer than the limit of 366 days"));
}

// Meta or env: entry count and sizes; returns the bytes they hold.
size_t Map(const std::string& what, const std::map<std::string, std::string>& m, Errors& errs) {
  Size(what + " entries", m.size(), L::kMaxMapEntries, errs);
  size_t bytes = 0;
  for (const auto& [k, v] : m) {
    if (k.size() > L::kMaxNameBytes || v.size() > L::kMaxStringBytes) {
      errs.push_back(absl::StrCat(what, " entry \"", k.substr(0, 64),
                                  "\" is too large (keys up to ", L::kMaxNameBytes,
                                  " bytes, values up to ", L::kMaxStringBytes, ")"));
      break;
    }
    bytes += k.size() + v.size() + 2;
  }
  return bytes;
}

template <typename C>  // model::Constraint or model::Affinity
void Constraints(const std::string& what, const std::vector<C>& list, Errors& errs) {
  Size(what + " constraints", list.size(), L::kMaxConstraints, errs);
  for (const C& c : list) {
    Text(what + " constraint target", c.ltarget, errs);
    Text(what + " constraint target", c.rtarget, errs);
    Text(what + " constraint operand", c.operand, errs);
  }
}

void Networks(const std::string& what, const std::vector<model::NetworkResource>& nets,
              Errors& errs) {
  for (const model::NetworkResource& n : nets) {
    Size(what + " ports", n.reserved_ports.size() + n.dynamic_ports.size(), L::kMaxPorts, errs);
    for (const std::string* t : {&n.mode, &n.device, &n.cidr, &n.ip})
      Text(what + " network", *t, errs);
    for (const auto* ports : {&n.reserved_ports, &n.dynamic_ports}) {
      for (const model::Port& p : *ports) {
        Text(what + " port label", p.label, errs);
        Text(what + " port host_network", p.host_network, errs);
      }
    }
  }
}

// Depth of a `config` value, stopping at the limit (so a deep value costs no more).
int Depth(const model::Value& v, int limit) {
  if (limit <= 0)
    return 1;
  int deepest = 0;
  if (const auto* a = std::get_if<model::Value::Array>(&v.storage())) {
    for (const model::Value& e : *a)
      deepest = std::max(deepest, Depth(e, limit - 1));
    return deepest + 1;
  }
  if (const auto* o = std::get_if<model::Value::Object>(&v.storage())) {
    for (const auto& [k, e] : *o)
      deepest = std::max(deepest, Depth(e, limit - 1));
    return deepest + 1;
  }
  return 0;
}

void Restart(const std::string& what, const std::optional<model::RestartPolicy>& p, Errors& errs) {
  if (!p)
    return;
  Number(what + " restart attempts", p->attempts, L::kMaxAttempts, errs);
  Time(what + " restart interval", p->interval, errs);
  Time(what + " restart delay", p->delay, errs);
}

void Resources(const std::string& what, const model::Resources& r, Errors& errs) {
  Number(what + " cpu", r.cpu, L::kMaxCpuMhz, errs);
  Number(what + " memory", r.memory_mb, L::kMaxMemoryMb, errs);
  Number(what + " memory_max", r.memory_max_mb, L::kMaxMemoryMb, errs);
  Number(what + " disk", r.disk_mb, L::kMaxDiskMb, errs);
  Size(what + " devices", r.devices.size(), L::kMaxDevices, errs);
  for (const model::RequestedDevice& d : r.devices) {
    Text(what + " device name", d.name, errs);
    Number(what + " device \"" + d.name.substr(0, 64) + "\" count",
           static_cast<int64_t>(std::min<uint64_t>(d.count, INT64_MAX)),
           static_cast<int64_t>(L::kMaxDeviceCount), errs);
    Constraints(what + " device", d.constraints, errs);
    Constraints(what + " device affinity", d.affinities, errs);
  }
  Networks(what, r.networks, errs);
}

void CheckTask(const std::string& group, const model::Task& t, Errors& errs) {
  const std::string what = "Task \"" + t.name.substr(0, 64) + "\" of group \"" + group + "\"";
  Name(what + " name", t.name, errs);
  for (const std::string* text : {&t.driver, &t.user, &t.kill_signal})
    Text(what + " driver, user or kill_signal", *text, errs);
  if (t.lifecycle)
    Text(what + " lifecycle hook", t.lifecycle->hook, errs);
  if (t.dispatch_payload)
    Text(what + " dispatch_payload file", t.dispatch_payload->file, errs);
  if (t.restart_policy)
    Text(what + " restart mode", t.restart_policy->mode, errs);
  Constraints(what, t.constraints, errs);
  size_t bytes = Map(what + " env", t.env, errs) + Map(what + " meta", t.meta, errs);
  if (bytes > L::kMaxTaskEnvBytes) {
    errs.push_back(absl::StrCat(what, ": env and meta hold ", bytes, " bytes; the limit is ",
                                L::kMaxTaskEnvBytes));
  }
  if (Depth(t.config, L::kMaxConfigDepth + 1) > L::kMaxConfigDepth) {
    errs.push_back(
        absl::StrCat(what, " config is nested deeper than ", L::kMaxConfigDepth, " levels"));
  }
  Resources(what, t.resources, errs);
  Restart(what, t.restart_policy, errs);
  Time(what + " kill_timeout", t.kill_timeout, errs);
  Time(what + " shutdown_delay", t.shutdown_delay, errs);
  Number(what + " log max_files", t.log_config.max_files, L::kMaxLogFiles, errs);
  Number(what + " log max_file_size", t.log_config.max_file_size_mb, L::kMaxLogFileSizeMb, errs);
}

// The update and migrate blocks: the scheduler makes one slot per canary and adds
// their durations to the clock.
void Policies(const std::string& what, const model::TaskGroup& g, Errors& errs) {
  if (g.update) {
    const model::UpdateStrategy& u = *g.update;
    Number(what + " update canary", u.canary, L::kMaxCount, errs);
    Number(what + " update max_parallel", u.max_parallel, L::kMaxCount, errs);
    Time(what + " update stagger", u.stagger, errs);
    Time(what + " update min_healthy_time", u.min_healthy_time, errs);
    Time(what + " update healthy_deadline", u.healthy_deadline, errs);
    Time(what + " update progress_deadline", u.progress_deadline, errs);
    Text(what + " update health_check", u.health_check, errs);
  }
  if (g.migrate) {
    const model::MigrateStrategy& m = *g.migrate;
    Number(what + " migrate max_parallel", m.max_parallel, L::kMaxCount, errs);
    Time(what + " migrate min_healthy_time", m.min_healthy_time, errs);
    Time(what + " migrate healthy_deadline", m.healthy_deadline, errs);
    Text(what + " migrate health_check", m.health_check, errs);
  }
}

void CheckGroup(const model::TaskGroup& g, Errors& errs) {
  const std::string what = "Group \"" + g.name.substr(0, 64) + "\"";
  Name(what + " name", g.name, errs);
  Number(what + " count", g.count, L::kMaxCount, errs);
  Size(what + " tasks", g.tasks.size(), L::kMaxTasks, errs);
  Constraints(what, g.constraints, errs);
  Map(what + " meta", g.meta, errs);
  Restart(what, g.restart_policy, errs);
  if (g.reschedule_policy) {
    const model::ReschedulePolicy& p = *g.reschedule_policy;
    Number(what + " reschedule attempts", p.attempts, L::kMaxAttempts, errs);
    Time(what + " reschedule interval", p.interval, errs);
    Time(what + " reschedule delay", p.delay, errs);
    Time(what + " reschedule max_delay", p.max_delay, errs);
    Text(what + " reschedule delay_function", p.delay_function, errs);
  }
  if (g.restart_policy)
    Text(what + " restart mode", g.restart_policy->mode, errs);
  if (g.ephemeral_disk)
    Number(what + " ephemeral_disk size", g.ephemeral_disk->size_mb, L::kMaxDiskMb, errs);
  if (g.shutdown_delay)
    Time(what + " shutdown_delay", *g.shutdown_delay, errs);
  if (g.max_client_disconnect)
    Time(what + " max_client_disconnect", *g.max_client_disconnect, errs);
  Policies(what, g, errs);
  Networks(what, g.networks, errs);
  if (g.tasks.size() <= L::kMaxTasks) {
    for (const model::Task& t : g.tasks)
      CheckTask(g.name.substr(0, 64), t, errs);
  }
}

}  // namespace

void CheckJobLimits(const model::Job& job, std::vector<std::string>& errs) {
  Name("Job ID", job.id, errs);
  Name("Job name", job.name, errs);
  Size("Job task groups", job.task_groups.size(), L::kMaxGroups, errs);
  Size("Job datacenters", job.datacenters.size(), L::kMaxDatacenters, errs);
  for (const std::string& dc : job.datacenters)
    Name("Job datacenter", dc, errs);
  for (const std::string* text :
       {&job.region, &job.namespace_, &job.type, &job.node_pool, &job.parent_id})
    Name("Job region, namespace, type, node_pool or parent", *text, errs);
  if (job.payload.size() > L::kMaxPayloadBytes) {
    errs.push_back(absl::StrCat("Job payload is ", job.payload.size(), " bytes; the limit is ",
                                L::kMaxPayloadBytes));
  }
  Constraints("Job", job.constraints, errs);
  Map("Job meta", job.meta, errs);
  if (job.IsPeriodic() || job.IsParameterized()) {
    // Its children's IDs are longer: a dispatched one's, and its periodic children's.
    const size_t room = (job.IsParameterized() ? L::kDispatchIdSuffixBytes : 0) +
                        (job.IsPeriodic() ? L::kPeriodicIdSuffixBytes : 0);
    Size("Job ID bytes of a periodic or parameterized job", job.id.size(), L::kMaxNameBytes - room,
         errs);
  }
  if (job.periodic) {
    Size("Job periodic crons", job.periodic->specs.size(), L::kMaxCronSpecs, errs);
    for (const std::string& spec : job.periodic->AllSpecs())
      Name("Job periodic cron", spec, errs);
    Name("Job periodic time_zone", job.periodic->time_zone, errs);
    Name("Job periodic spec type", job.periodic->spec_type, errs);
  }
  if (job.parameterized) {
    const model::ParameterizedJobConfig& p = *job.parameterized;
    Name("Job parameterized payload", p.payload, errs);
    Size("Job parameterized meta keys", p.meta_required.size() + p.meta_optional.size(),
         L::kMaxMapEntries, errs);
    for (const auto* keys : {&p.meta_required, &p.meta_optional}) {
      for (const std::string& key : *keys)
        Name("Job parameterized meta key", key, errs);
    }
  }
  Name("Job dispatch idempotency token", job.dispatch_idempotency_token, errs);
  if (job.task_groups.size() <= L::kMaxGroups) {
    for (const model::TaskGroup& g : job.task_groups)
      CheckGroup(g, errs);
  }
}

}  // namespace drover::codec
