// What the docker driver asks the Engine API to create for a task (POST
// /containers/create): the image and command, Nomad's mounts of the alloc dir, the
// task's local/ and secrets/, its environment, Drover's labels, its resource limits,
// ports, devices, and the options of its `config`, as far as the plugin's settings
// allow them. A pure function of its inputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "codec/docker_config.h"
#include "codec/json.h"
#include "drivers/docker/plugin_config.h"
#include "drivers/driver.h"

namespace drover::drivers::docker {

// Drover's labels on every container: how dangling containers are found after a crash.
inline constexpr char kLabelAllocId[] = "com.hashicorp.nomad.alloc_id";
inline constexpr char kLabelTaskName[] = "com.hashicorp.nomad.task_name";
inline constexpr char kLabelJobName[] = "com.hashicorp.nomad.job_name";
// Drover's own: the task instance (TaskConfig::id) and the node that started it. Only
// containers of this node are ever treated as dangling.
inline constexpr char kLabelTaskId[] = "com.drover.task_id";
inline constexpr char kLabelNodeId[] = "com.drover.node_id";

// The create body, or why it cannot be made (Nomad's texts where it has them):
// privileged without allow_privileged, a capability outside allow_caps, a host path
// without volumes enabled, a bind source that escapes the task dir, a port label with
// no mapping. `nvidia_runtime`: the daemon has the NVIDIA runtime, so GPUs the device
// hook reserved (NVIDIA_VISIBLE_DEVICES) become a DeviceRequest for those GPUs.
// `pinned`: bind sources PinBindSources pinned, by source as written.
absl::StatusOr<codec::Json> ContainerSpec(const TaskConfig& task,
                                          const codec::DockerTaskConfig& config,
                                          const PluginConfig& plugin, bool nvidia_runtime = false,
                                          const std::map<std::string, std::string>& pinned = {});

// Bind sources under the task dir, checked on the file system (blocking: run it on the
// pool, just before the create): each must exist beneath the task dir with no symlink
// on its path, since the task could have planted one in local/ on an earlier run.
// ContainerSpec checks them only as paths. PermissionDenied naming the source
// otherwise. (The daemon opens the path itself later; the task is not running
// between the two.)
absl::Status CheckBindSourcesBeneath(const TaskConfig& task, const codec::DockerTaskConfig& config);

// Relative bind sources lie in the alloc dir, which the group's other tasks write while
// this one starts (and a docker task's own local/ is writable by every host user):
// checked by name, one could be swapped for a symlink to the host before the daemon
// opens it. Each is opened beneath
// the alloc dir (as CheckBindSourcesBeneath) and bind-mounted from that descriptor
// onto `pin_dir`/<n>, a path only the agent can change, which the daemon gets instead.
// Blocking (on the pool); needs root. The map: source as written → pinned path.
absl::StatusOr<std::map<std::string, std::string>> PinBindSources(
    const TaskConfig& task, const codec::DockerTaskConfig& config, const std::string& pin_dir);
// Unmounts and removes a pin dir (blocking). OK when there is none.
absl::Status UnpinBindSources(const std::string& pin_dir);

}  // namespace drover::drivers::docker
