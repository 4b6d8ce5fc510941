#include "codec/canonicalize.h"

#include <chrono>
#include <limits>
#include <optional>
#include <string>

namespace drover::codec {

namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr int kDefaultPriority = 50;
constexpr int kDefaultDiskMB = 300;
constexpr int kDefaultLogMaxFiles = 10;
constexpr int kDefaultLogMaxFileSizeMB = 10;
constexpr int kDefaultCPU = 100;
constexpr int kDefaultMemoryMB = 300;
constexpr model::Duration kDefaultKillTimeout = seconds(5);

// api/tasks.go: service and system jobs restart twice in 30 minutes; everything else
// (batch, sysbatch) three times a day.
model::RestartPolicy DefaultRestartPolicy(const std::string& job_type) {
  model::RestartPolicy p;
  p.delay = seconds(15);
  p.mode = model::kRestartModeFail;
  if (job_type == model::kJobTypeService || job_type == model::kJobTypeSystem) {
    p.attempts = 2;
    p.interval = minutes(30);
  } else {
    p.attempts = 3;
    p.interval = hours(24);
  }
  return p;
}

// A partial policy takes what it left out from `defaults` (Nomad's RestartPolicy.Merge).
void FillRestartPolicy(model::RestartPolicy& p, const model::RestartPolicy& defaults) {
  if (p.attempts == model::RestartPolicy::kUnsetAttempts)
    p.attempts = defaults.attempts;
  if (p.interval == model::RestartPolicy::kUnsetDuration)
    p.interval = defaults.interval;
  if (p.delay == model::RestartPolicy::kUnsetDuration)
    p.delay = defaults.delay;
  if (p.mode.empty())
    p.mode = defaults.mode.empty() ? model::kRestartModeFail : defaults.mode;
}

// structs.DefaultServiceJobReschedulePolicy / DefaultBatchJobReschedulePolicy; system
// and sysbatch jobs are never rescheduled.
std::optional<model::ReschedulePolicy> DefaultReschedulePolicy(const std::string& job_type) {
  model::ReschedulePolicy p;
  if (job_type == model::kJobTypeService) {
    p.delay = seconds(30);
    p.delay_function = "exponential";
    p.max_delay = hours(1);
    p.unlimited = true;
    return p;
  }
  if (job_type == model::kJobTypeBatch) {
    p.attempts = 1;
    p.interval = hours(24);
    p.delay = seconds(5);
    p.delay_function = "constant";
    return p;
  }
  return std::nullopt;
}

void CanonicalizeTask(model::Task& task, const model::TaskGroup& group) {
  if (task.lifecycle && task.lifecycle->hook.empty()) {
    task.lifecycle.reset();
  }
  if (task.config.is_null()) {
    task.config = model::Value::Object{};
  }
  if (task.resources.cpu == 0 && task.resources.cores == 0) {
    task.resources.cpu = kDefaultCPU;
  }
  if (task.resources.memory_mb == 0) {
    task.resources.memory_mb = kDefaultMemoryMB;
  }
  if (!task.restart_policy) {
    task.restart_policy = group.restart_policy;
  } else if (group.restart_policy) {
    FillRestartPolicy(*task.restart_policy, *group.restart_policy);
  }
  if (task.kill_timeout == model::Duration::zero()) {
    task.kill_timeout = kDefaultKillTimeout;
  }
  if (task.log_config.max_files == 0) {
    task.log_config.max_files = kDefaultLogMaxFiles;
  }
  if (task.log_config.max_file_size_mb == 0) {
    task.log_config.max_file_size_mb = kDefaultLogMaxFileSizeMB;
  }
}

// api.DefaultUpdateStrategy under the fields the job and group set, except that
// health_check defaults to "task_states": Drover has no service checks yet.
void CanonicalizeUpdate(model::UpdateStrategy& u) {
  using U = model::UpdateStrategy;
  if (u.stagger == U::kUnsetDuration)
    u.stagger = seconds(30);
  if (u.max_parallel == U::kUnsetInt)
    u.max_parallel = 1;
  if (u.health_check.empty())
    u.health_check = model::kUpdateHealthTaskStates;
  if (u.min_healthy_time == U::kUnsetDuration)
    u.min_healthy_time = seconds(10);
  if (u.healthy_deadline == U::kUnsetDuration)
    u.healthy_deadline = minutes(5);
  if (u.progress_deadline == U::kUnsetDuration)
    u.progress_deadline = minutes(10);
  if (u.canary == U::kUnsetInt)
    u.canary = 0;
}

void CanonicalizeGroup(model::TaskGroup& group, const model::Job& job) {
  if (group.scaling) {
    // As Nomad's api: an unset minimum is the group's count (or 1 without one), and an
    // unset count the minimum.
    model::ScalingPolicy& s = *group.scaling;
    if (s.type.empty())
      s.type = model::kScalingHorizontal;
    if (s.min == model::ScalingPolicy::kUnset)
      s.min = group.count == model::TaskGroup::kUnsetCount ? 1 : group.count;
    if (group.count == model::TaskGroup::kUnsetCount && s.min >= 0 &&
        s.min <= std::numeric_limits<int>::max())
      group.count = static_cast<int>(s.min);
  }
  if (group.count == model::TaskGroup::kUnsetCount) {
    group.count = 1;
  }
  if (!group.ephemeral_disk) {
    group.ephemeral_disk = model::EphemeralDisk{};
  }
  if (group.ephemeral_disk->size_mb == 0) {
    group.ephemeral_disk->size_mb = kDefaultDiskMB;
  }
  if (!group.restart_policy) {
    group.restart_policy = DefaultRestartPolicy(job.type);
  } else {
    FillRestartPolicy(*group.restart_policy, DefaultRestartPolicy(job.type));
  }
  const std::optional<model::ReschedulePolicy> reschedule = DefaultReschedulePolicy(job.type);
  if (!group.reschedule_policy) {
    group.reschedule_policy = reschedule;
  } else if (group.reschedule_policy->delay_function.empty() && reschedule) {
    group.reschedule_policy->delay_function = reschedule->delay_function;
  }
  if (job.type == model::kJobTypeService) {
    // structs.DefaultMigrateStrategy, under the fields the job and group set. Other job
    // types keep what they were given, which validation refuses.
    model::MigrateStrategy& m = group.migrate ? *group.migrate : group.migrate.emplace();
    if (m.max_parallel == model::MigrateStrategy::kUnsetMaxParallel)
      m.max_parallel = 1;
    if (m.health_check.empty())
      m.health_check = model::kMigrateHealthChecks;
    if (m.min_healthy_time == model::MigrateStrategy::kUnsetDuration)
      m.min_healthy_time = seconds(10);
    if (m.healthy_deadline == model::MigrateStrategy::kUnsetDuration)
      m.healthy_deadline = minutes(5);
  }
  if (group.update)
    CanonicalizeUpdate(*group.update);
  for (model::Task& task : group.tasks) {
    CanonicalizeTask(task, group);
  }
}

}  // namespace

void CanonicalizeJob(model::Job& job) {
  if (job.region.empty()) {
    job.region = "global";
  }
  if (job.namespace_.empty()) {
    job.namespace_ = "default";
  }
  if (job.type.empty()) {
    job.type = model::kJobTypeService;
  }
  if (job.priority == 0) {
    job.priority = kDefaultPriority;
  }
  if (job.name.empty()) {
    job.name = job.id;
  }
  if (job.datacenters.empty()) {
    job.datacenters = {"*"};
  }
  if (job.node_pool.empty()) {
    job.node_pool = "default";
  }
  if (job.periodic) {
    if (job.periodic->spec_type.empty())
      job.periodic->spec_type = model::kPeriodicSpecCron;
    if (job.periodic->time_zone.empty())
      job.periodic->time_zone = "UTC";
  }
  if (job.parameterized && job.parameterized->payload.empty())
    job.parameterized->payload = model::kDispatchPayloadOptional;
  for (model::TaskGroup& group : job.task_groups) {
    CanonicalizeGroup(group, job);
  }
}

}  // namespace drover::codec
