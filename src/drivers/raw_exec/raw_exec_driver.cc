#include "drivers/raw_exec/raw_exec_driver.h"

#include "drivers/process_stats.h"

namespace drover::drivers {

Capabilities RawExecDriver::GetCapabilities() const {
  return Capabilities{.send_signals = true, .exec = false, .fs_isolation = "none"};
}

absl::StatusOr<supervisor::SpawnSpec> RawExecDriver::BuildSpawnSpec(const TaskConfig& config) {
  auto argv = CommandArgv(config.config);
  if (!argv.ok())
    return argv.status();
  supervisor::SpawnSpec spec;
  spec.task_id = config.id;
  spec.argv = std::move(*argv);
  spec.env = config.env;
  spec.cwd = config.task_dir;
  spec.user = config.user;
  spec.logs = ToLogSpec(config.logs);
  return spec;
}

absl::StatusOr<TaskResourceUsage> RawExecDriver::TaskStats(const std::string& task_id) {
  Task* task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  TaskResourceUsage usage;
  usage.timestamp = common::ToUnixNanos(clock().Now());
  usage.memory.measured = {"RSS"};
  usage.cpu.measured = {"System Mode", "User Mode", "Percent"};
  if (task->exited->IsSet())
    return usage;
  // Everything in the task's process group (it leads its own session).
  const double ticks = static_cast<double>(ClockTicksPerSecond());
  double user = 0;
  double system = 0;
  for (const ProcSample& p : ProcessGroupSamples(task->handle.pid)) {
    usage.memory.rss += p.rss_bytes;
    user += static_cast<double>(p.utime_ticks) / ticks;
    system += static_cast<double>(p.stime_ticks) / ticks;
  }
  usage.cpu.user_mode = user;
  usage.cpu.system_mode = system;
  usage.cpu.total_ticks = user + system;
  if (task->last_sample_ns != 0 && usage.timestamp > task->last_sample_ns) {
    const double wall = static_cast<double>(usage.timestamp - task->last_sample_ns) / 1e9;
    usage.cpu.percent = std::max(0.0, 100.0 * (user + system - task->last_cpu_seconds) / wall);
  }
  task->last_cpu_seconds = user + system;
  task->last_sample_ns = usage.timestamp;
  return usage;
}

}  // namespace drover::drivers
