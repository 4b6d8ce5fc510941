// What the docker driver asks the Engine API to create for a task (POST
// /containers/create): the image and command, Nomad's mounts of the alloc dir, the
// task's local/ and secrets/, its environment, Drover's labels, its resource limits,
// ports, devices, and the options of its `config`, as far as the plugin's settings
// allow them. A pure function of its inputs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "codec/docker_config.h"
#include "codec/json.h"
#include "drivers/driver.h"

namespace drover::drivers::docker {

// The agent's `plugin "docker" { config { ... } }` settings the spec depends on.
struct PluginConfig {
  bool allow_privileged = false;
  // Capabilities a task may add (lower case, without CAP_); Nomad's default list.
  std::vector<std::string> allow_caps = {
      "audit_write",      "chown",   "dac_override", "fowner",  "fsetid", "kill",      "mknod",
      "net_bind_service", "setfcap", "setgid",       "setpcap", "setuid", "sys_chroot"};
  // volumes { enabled }: host paths outside the task dir may be mounted.
  bool volumes_enabled = false;
};

// A port of the group's network the task publishes: its label, the host port the
// scheduler gave it, the container port (`to`, or the host port when 0), and the host
// address it binds (127.0.0.1 in tests).
struct PortMapping {
  std::string label;
  int host_port = 0;
  int container_port = 0;
  std::string host_ip;
};

// Drover's labels on every container: how dangling containers are found after a crash.
inline constexpr char kLabelAllocId[] = "com.hashicorp.nomad.alloc_id";
inline constexpr char kLabelTaskName[] = "com.hashicorp.nomad.task_name";
inline constexpr char kLabelJobName[] = "com.hashicorp.nomad.job_name";

// The create body, or why it cannot be made (Nomad's texts where it has them):
// privileged without allow_privileged, a capability outside allow_caps, a host path
// without volumes enabled, a bind source that escapes the task dir, a port label with
// no mapping.
absl::StatusOr<codec::Json> ContainerSpec(const TaskConfig& task,
                                          const codec::DockerTaskConfig& config,
                                          const PluginConfig& plugin,
                                          const std::vector<PortMapping>& ports);

// Bind sources under the task dir, checked on the file system (blocking: run it on the
// pool, just before the create): each must exist beneath the task dir with no symlink
// on its path, since the task could have planted one in local/ on an earlier run.
// ContainerSpec checks them only as paths. PermissionDenied naming the source
// otherwise. (The daemon opens the path itself later; the task is not running
// between the two.)
absl::Status CheckBindSourcesBeneath(const TaskConfig& task, const codec::DockerTaskConfig& config);

}  // namespace drover::drivers::docker
