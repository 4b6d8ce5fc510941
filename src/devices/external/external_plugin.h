// External device plugins: an executable that speaks Drover's line-delimited JSON
// device protocol on stdin/stdout (docs/device-plugin-protocol.md), so users add device
// types without rebuilding Drover.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "devices/device_plugin.h"

namespace drover::devices {

struct ExternalPluginConfig {
  std::string name;     // the plugin block's label
  std::string command;  // absolute path of the executable
  std::vector<std::string> args;
  // The plugin block's `config` object, as JSON text, sent in the first request.
  std::string config_json = "{}";
  // How long one request may take before the process is killed.
  common::Duration request_timeout = std::chrono::seconds(10);
};

DevicePluginPtr MakeExternalPlugin(ExternalPluginConfig config);

}  // namespace drover::devices
