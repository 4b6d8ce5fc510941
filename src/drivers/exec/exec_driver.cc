#include "drivers/exec/exec_driver.h"

#include <unistd.h>

namespace drover::drivers {

std::map<std::string, std::string> DefaultChrootEnv() {
  return {{"/bin", "/bin"},     {"/etc", "/etc"},     {"/lib", "/lib"},
          {"/lib32", "/lib32"}, {"/lib64", "/lib64"}, {"/run/resolvconf", "/run/resolvconf"},
          {"/sbin", "/sbin"},   {"/usr", "/usr"}};
}

ExecDriver::ExecDriver(asio::any_io_executor executor, common::Clock& clock, SupervisorLink& link,
                       ExecDriverOptions options)
    : SupervisedDriver(std::move(executor), clock, link),
      options_(std::move(options)),
      cgroups_(options_.cgroups ? *options_.cgroups : supervisor::CgroupLayout::Detect()) {}

Capabilities ExecDriver::GetCapabilities() const {
  return Capabilities{.send_signals = true, .exec = false, .fs_isolation = "chroot"};
}

DriverFingerprint ExecDriver::Fingerprint() const {
  DriverFingerprint fp = SupervisedDriver::Fingerprint();
  if (geteuid() != 0) {
    return DriverFingerprint{
        .detected = false, .healthy = false, .health_description = "exec driver must run as root"};
  }
  if (cgroups_.mode == supervisor::CgroupMode::kNone) {
    return DriverFingerprint{
        .detected = false,
        .healthy = false,
        .health_description = "no cgroup hierarchy with the memory controller is mounted"};
  }
  fp.attributes["driver.exec.cgroups"] = cgroups_.mode == supervisor::CgroupMode::kV2 ? "v2" : "v1";
  return fp;
}

absl::StatusOr<supervisor::SpawnSpec> ExecDriver::BuildSpawnSpec(const TaskConfig& config) {
  auto argv = CommandArgv(config.config);
  if (!argv.ok())
    return argv.status();
  int64_t pids_limit = kDefaultPidsLimit;
  if (const model::Value* p = config.config.Find("pids_limit"); p != nullptr && !p->is_null()) {
    const auto* i = std::get_if<int64_t>(&p->storage());
    const auto* d = std::get_if<double>(&p->storage());
    if (i != nullptr) {
      pids_limit = *i;
    } else if (d != nullptr && *d == static_cast<double>(static_cast<int64_t>(*d))) {
      pids_limit = static_cast<int64_t>(*d);
    } else {
      pids_limit = -1;
    }
    if (pids_limit < 0) {
      return absl::InvalidArgumentError(
          "driver config \"pids_limit\" must be a non-negative integer");
    }
  }
  if (config.task_dir.empty())
    return absl::InvalidArgumentError("exec needs a task dir to chroot into");
  supervisor::SpawnSpec spec;
  spec.task_id = config.id;
  spec.argv = std::move(*argv);
  spec.env = config.env;
  spec.cwd = "/";
  spec.user = config.user.empty() ? DefaultUser() : config.user;
  spec.logs = ToLogSpec(config.logs);
  spec.isolation.enabled = true;
  spec.isolation.root = config.task_dir;
  if (config.network_mode == "none") {
    spec.isolation.network_none = true;
  } else if (!config.network_mode.empty() && config.network_mode != "host") {
    return absl::InvalidArgumentError("exec cannot run a task in network mode \"" +
                                      config.network_mode + "\"");
  }
  for (const auto& [host, inside] : options_.chroot_env)
    spec.isolation.binds.push_back({.source = host, .target = inside, .readonly = true});
  if (!config.alloc_dir.empty()) {
    spec.isolation.binds.push_back(
        {.source = config.alloc_dir + "/alloc", .target = "/alloc", .readonly = false});
  }
  // Hook mounts after the built-in ones: a device's files may sit inside /alloc.
  for (const MountConfig& m : config.mounts) {
    spec.isolation.binds.push_back(
        {.source = m.host_path, .target = m.task_path, .readonly = m.readonly});
  }
  for (const DeviceConfig& d : config.devices) {
    spec.isolation.devices.push_back(
        {.host_path = d.host_path, .task_path = d.task_path, .permissions = d.permissions});
  }
  spec.cgroup.name = supervisor::CgroupName(config.id);
  supervisor::CgroupLimits& limits = spec.cgroup.limits;
  const int64_t mb = int64_t{1} << 20;
  if (config.memory_max_mb > 0) {
    limits.memory_bytes = config.memory_max_mb * mb;
    limits.memory_soft_bytes = config.memory_mb * mb;
  } else {
    limits.memory_bytes = config.memory_mb * mb;
  }
  limits.cpu_shares = config.cpu_shares;
  limits.pids_max = pids_limit;
  return spec;
}

absl::StatusOr<TaskResourceUsage> ExecDriver::TaskStats(const std::string& task_id) {
  Task* task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  TaskResourceUsage usage;
  usage.timestamp = common::ToUnixNanos(clock().Now());
  usage.memory.measured = {"RSS", "Cache", "Swap", "Usage", "Max Usage"};
  usage.cpu.measured = {"System Mode", "User Mode", "Throttled Periods", "Throttled Time",
                        "Percent"};
  const supervisor::CgroupUsage u =
      supervisor::TaskCgroup(cgroups_, supervisor::CgroupName(task_id)).Usage();
  usage.memory.rss = u.rss;
  usage.memory.cache = u.cache;
  usage.memory.swap = u.swap;
  usage.memory.usage = u.memory_usage;
  usage.memory.max_usage = u.memory_max_usage;
  usage.cpu.throttled_periods = u.throttled_periods;
  usage.cpu.throttled_time = u.throttled_time_ns;
  CpuPercents({.user = u.cpu_user_seconds, .system = u.cpu_system_seconds}, &task->last_cpu,
              task->last_sample_ns, usage.timestamp, usage.cpu);
  task->last_sample_ns = usage.timestamp;
  return usage;
}

}  // namespace drover::drivers
