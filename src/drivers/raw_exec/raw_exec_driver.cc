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
  if (task->exited->cancelled())
    return usage;
  // The task and everything it started, in total and each process on its own.
  const double ticks = static_cast<double>(ClockTicksPerSecond());
  Task::CpuSample total;
  std::map<int, Task::CpuSample> pid_cpu;
  if (task->proc_files.pid() != task->handle.pid)
    task->proc_files = ProcFiles(task->handle.pid);
  std::vector<ProcSample> tree = ProcessTreeSamples(task->handle.pid, &task->proc_files);
  if (!tree.empty() && task->handle.proc_start_ticks != 0 &&
      tree.front().start_ticks != task->handle.proc_start_ticks) {
    tree.clear();  // the task is gone and its pid taken by another process
  }
  for (const ProcSample& p : tree) {
    const Task::CpuSample cpu{.user = static_cast<double>(p.utime_ticks) / ticks,
                              .system = static_cast<double>(p.stime_ticks) / ticks};
    total.user += cpu.user;
    total.system += cpu.system;
    usage.memory.rss += p.rss_bytes;
    ResourceUsage& per = usage.pids[std::to_string(p.pid)];
    per.memory.rss = p.rss_bytes;
    per.memory.measured = usage.memory.measured;
    per.cpu.measured = usage.cpu.measured;
    Task::CpuSample last = task->last_pid_cpu[p.pid];
    CpuPercents(cpu, &last, task->last_sample_ns, usage.timestamp, per.cpu);
    pid_cpu[p.pid] = cpu;
  }
  CpuPercents(total, &task->last_cpu, task->last_sample_ns, usage.timestamp, usage.cpu);
  task->last_pid_cpu = std::move(pid_cpu);  // processes that are gone are forgotten
  task->last_sample_ns = usage.timestamp;
  return usage;
}

}  // namespace drover::drivers
