// Device plugin blocks of the agent configuration (docs/devices.md), and the plugins
// they describe:
//
//   plugin "example" { config { dir = "/var/lib/fake-gpus"  env_var = "..." } }
//   plugin "nvidia"  { config { enabled = true  ignored_gpu_ids = ["GPU-..."] } }
//   plugin "fpga"    { command = "/usr/local/bin/fpga-plugin"  args = []  config { ... } }
//
// Every kind also takes config.fingerprint_period (a duration such as "1s").
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "devices/device_manager.h"

namespace drover::agent {

// Checks one plugin block naming a device plugin and appends it to
// config.device_plugins. InvalidArgument naming the setting on bad input.
absl::Status ApplyDevicePlugin(const std::string& name, const nlohmann::json& block,
                               AgentConfig& config);

std::vector<devices::ConfiguredPlugin> MakeDevicePlugins(
    const std::vector<DevicePluginConfig>& configs);

}  // namespace drover::agent
