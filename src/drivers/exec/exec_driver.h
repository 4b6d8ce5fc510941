// exec: runs the task's command isolated from the host (through the node supervisor,
// so it outlives the agent):
//   - new mount, pid, ipc and uts namespaces: the task is pid 1 of its own pid
//     namespace and everything it starts dies with it;
//   - chrooted into its task dir, where the host directories of `chroot_env` are
//     bind-mounted read-only, the alloc dir is mounted at /alloc, and /proc and a
//     minimal /dev are fresh; none of these mounts is visible on the host;
//   - as `user` (default nobody), with no_new_privs, a reduced capability bounding
//     set and a seccomp filter (supervisor/hardening.h), and an environment of only
//     the job's and Nomad's variables (none of the agent's);
//   - in network mode "none" (the group's network), in its own network namespace with
//     only a loopback interface; otherwise on the host's network;
//   - in a cgroup (v2, or v1 memory/cpu/cpuacct/pids) limiting memory to `memory`
//     (or `memory_max`, with `memory` as the soft limit), weighting CPU by `cpu` and
//     capping the number of processes at `pids_limit` (kDefaultPidsLimit unless set;
//     0 is no limit); an OOM kill is reported in the exit. Resource usage comes from
//     the cgroup.
// Needs root and a cgroup hierarchy with the memory controller; otherwise the driver
// fingerprints as undetected and nothing is placed on it.
//
// Config: command (required; a path inside the task's root or a name in its PATH),
// args (list of strings), pids_limit (int).
//
// As in any pid namespace, the task (pid 1) only receives signals it installed a
// handler for: a `kill_signal` it ignores by default (e.g. SIGINT to `sleep`) leads to
// SIGKILL after `kill_timeout`.
#pragma once

#include <map>
#include <string>

#include "drivers/supervised/supervised_driver.h"

namespace drover::drivers {

// The process limit of an exec task whose config sets no pids_limit.
inline constexpr int64_t kDefaultPidsLimit = 4096;

// Nomad's default chroot_env: host path -> path inside the task.
std::map<std::string, std::string> DefaultChrootEnv();

struct ExecDriverOptions {
  std::map<std::string, std::string> chroot_env = DefaultChrootEnv();
  // Where task cgroups are; detected when unset.
  std::optional<supervisor::CgroupLayout> cgroups;
};

class ExecDriver final : public SupervisedDriver {
 public:
  // `clock` and `link` must outlive the driver.
  ExecDriver(asio::any_io_executor executor, common::Clock& clock, SupervisorLink& link,
             ExecDriverOptions options = {});

  std::string Name() const override { return "exec"; }
  std::string DefaultUser() const override { return "nobody"; }
  Capabilities GetCapabilities() const override;
  DriverFingerprint Fingerprint() const override;
  absl::StatusOr<TaskResourceUsage> TaskStats(const std::string& task_id) override;
  // What the supervisor is asked to run for `config` (public for tests).
  absl::StatusOr<supervisor::SpawnSpec> BuildSpawnSpec(const TaskConfig& config) override;

 private:
  ExecDriverOptions options_;
  supervisor::CgroupLayout cgroups_;
};

}  // namespace drover::drivers
