// The docker driver's task `config` (Nomad's names and meanings, docs/drivers.md#docker),
// checked at registration: an option Nomad's driver does not have, or one Drover does
// not carry out yet, is refused by name, and the image and ports are checked.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "model/job.h"

namespace drover::codec {

struct DockerAuth {
  std::string username;
  std::string password;
  std::string email;
  std::string server_address;
};

struct DockerMount {
  std::string type = "volume";  // bind, volume or tmpfs
  std::string target;
  std::string source;
  bool readonly = false;
};

struct DockerTaskConfig {
  std::string image;
  std::string command;
  std::vector<std::string> args;
  std::vector<std::string> entrypoint;
  std::string work_dir;
  std::string hostname;
  std::map<std::string, std::string> labels;
  bool init = false;
  bool readonly_rootfs = false;
  std::vector<std::string> extra_hosts;
  std::vector<std::string> dns_servers;
  std::map<std::string, std::string> sysctl;
  std::map<std::string, std::string> ulimit;
  std::vector<std::string> security_opt;
  std::vector<std::string> ports;  // the group network's port labels
  std::string network_mode;        // "" (bridge), bridge, host, none
  std::vector<DockerMount> mounts;
  std::vector<std::string> volumes;  // "host:container[:ro]", only where the plugin allows
  int64_t shm_size = 0;
  int64_t pids_limit = 0;
  bool privileged = false;
  std::vector<std::string> cap_add;
  std::vector<std::string> cap_drop;
  std::optional<DockerAuth> auth;
  bool auth_soft_fail = false;
  bool force_pull = false;
  std::string image_pull_timeout;  // a Go duration; "" is 5m
  std::string load;                // an image tar in the task dir
  std::string logging_type;        // only "" or json-file: Drover collects the logs
};

// Decodes and checks `task`'s config for the docker driver; the error lists every
// problem (one per line), each naming its option.
absl::StatusOr<DockerTaskConfig> ParseDockerConfig(const model::Task& task,
                                                   const model::TaskGroup& group);
// The same, of a config as the driver gets it (interpolated), without the checks that
// need the group.
absl::StatusOr<DockerTaskConfig> ParseDockerTaskConfig(const model::Value& config);

}  // namespace drover::codec
