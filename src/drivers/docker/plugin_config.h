// The agent's `plugin "docker" { config { ... } }` (Nomad's names, docs/drivers.md#docker):
// what Drover carries out, and every other setting of Nomad's refused by name.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "common/clock.h"

namespace drover::drivers::docker {

struct PluginConfig {
  // The daemon's socket ("unix:///var/run/docker.sock"): a local daemon only.
  std::string endpoint = "unix:///var/run/docker.sock";
  bool allow_privileged = false;
  // Capabilities a task may add (lower case, without CAP_); Nomad's default list.
  std::vector<std::string> allow_caps = {
      "audit_write",      "chown",   "dac_override", "fowner",  "fsetid", "kill",      "mknod",
      "net_bind_service", "setfcap", "setgid",       "setpcap", "setuid", "sys_chroot"};
  // volumes { enabled }: host paths outside the task dir may be mounted.
  bool volumes_enabled = false;
  // gc { image, image_delay, container, dangling_containers { enabled } }
  bool gc_image = true;
  common::Duration gc_image_delay = std::chrono::minutes(3);
  bool gc_container = true;
  bool gc_dangling = true;
  // The most a task's pids_limit may be, and what it gets when it sets none (0: none).
  int64_t pids_limit = 0;
  // Which task labels go on every container besides the three always set: names of
  // ExtraLabelNames() or globs of them ("job_*", "*"); Nomad's "com.hashicorp.nomad."
  // prefix is optional.
  std::vector<std::string> extra_labels;
  // How often the daemon is fingerprinted.
  common::Duration fingerprint_period = std::chrono::seconds(15);
};

// The names extra_labels may choose (each becomes com.hashicorp.nomad.<name>), and
// whether a pattern (a glob) chooses one.
const std::vector<std::string>& ExtraLabelNames();
bool ExtraLabelMatches(const std::string& pattern, const std::string& name);

// `config` as the agent's config file gives it (blocks as objects, or as one-element
// lists). InvalidArgument naming the setting for a bad value, an unknown one, or one of
// Nomad's that Drover does not carry out.
absl::StatusOr<PluginConfig> ParsePluginConfig(const nlohmann::json& config);

}  // namespace drover::drivers::docker
