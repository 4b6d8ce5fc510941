#include "agent/device_plugin_config.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

#include "common/go_duration.h"

namespace drover::agent {

namespace {

using Json = nlohmann::json;

absl::Status Bad(const std::string& name, absl::string_view key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("plugin \"", name, "\" config ", key, ": ", why));
}

absl::Status ReadString(const std::string& name, const Json& config, const char* key,
                        std::string& out) {
  if (!config.contains(key))
    return absl::OkStatus();
  if (!config[key].is_string())
    return Bad(name, key, "must be a string");
  out = config[key].get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadPeriod(const std::string& name, const Json& config, common::Duration& out) {
  std::string text;
  if (absl::Status s = ReadString(name, config, "fingerprint_period", text);
      !s.ok() || text.empty())
    return s;
  absl::StatusOr<common::Duration> d = common::ParseGoDuration(text);
  if (!d.ok() || *d <= common::Duration::zero())
    return Bad(name, "fingerprint_period",
               absl::StrCat("\"", text, "\" is not a positive duration"));
  out = *d;
  return absl::OkStatus();
}

// Settings a built-in plugin does not know are errors, not silently ignored.
absl::Status OnlyKeys(const std::string& name, const Json& config,
                      std::initializer_list<const char*> known) {
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      std::string list;
      for (const char* k : known)
        absl::StrAppend(&list, list.empty() ? "" : ", ", k);
      return Bad(name, it.key(), absl::StrCat("unknown setting (", name, " knows ", list, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyDevicePlugin(const std::string& name, const Json& block, AgentConfig& config) {
  const Json plugin_config = block.value("config", Json::object());
  if (!plugin_config.is_object())
    return absl::InvalidArgumentError(
        absl::StrCat("plugin \"", name, "\" config: must be a block"));
  DevicePluginConfig p;
  p.name = name;
  if (absl::Status s = ReadPeriod(name, plugin_config, p.fingerprint_period); !s.ok())
    return s;
  const bool external = block.contains("command");
  if (!external && block.contains("args"))
    return Bad(name, "args", "only external plugins (with a command) take args");
  if (external) {
    p.kind = DevicePluginConfig::Kind::kExternal;
    const std::string command = block["command"].get<std::string>();
    std::error_code ec;
    if (command.empty() || command[0] != '/')
      return absl::InvalidArgumentError(absl::StrCat("plugin \"", name, "\" command: \"", command,
                                                     "\" must be an absolute path"));
    if (!std::filesystem::is_regular_file(command, ec) || access(command.c_str(), X_OK) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("plugin \"", name, "\" command: \"", command,
                                                     "\" is not an executable file"));
    }
    p.external.name = name;
    p.external.command = command;
    if (block.contains("args"))
      p.external.args = block["args"].get<std::vector<std::string>>();
    p.external.config_json = plugin_config.dump();
  } else if (name == "example") {
    p.kind = DevicePluginConfig::Kind::kExample;
    if (absl::Status s = OnlyKeys(name, plugin_config, {"dir", "env_var", "fingerprint_period"});
        !s.ok())
      return s;
    if (absl::Status s = ReadString(name, plugin_config, "dir", p.example.dir); !s.ok())
      return s;
    if (p.example.dir.empty())
      return Bad(name, "dir", "is required: the directory of device files");
    p.example.dir = std::filesystem::absolute(p.example.dir).lexically_normal().string();
    if (absl::Status s = ReadString(name, plugin_config, "env_var", p.example.env_var); !s.ok())
      return s;
    if (p.example.env_var.empty() ||
        p.example.env_var.find_first_not_of(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
      return Bad(name, "env_var", "must be a variable name");
  } else {
    p.kind = DevicePluginConfig::Kind::kNvidia;
    if (absl::Status s =
            OnlyKeys(name, plugin_config,
                     {"enabled", "ignored_gpu_ids", "fingerprint_period", "nvml_library"});
        !s.ok())
      return s;
    if (plugin_config.contains("enabled")) {
      if (!plugin_config["enabled"].is_boolean())
        return Bad(name, "enabled", "must be true or false");
      p.nvidia.enabled = plugin_config["enabled"].get<bool>();
    }
    if (plugin_config.contains("ignored_gpu_ids")) {
      const Json& ids = plugin_config["ignored_gpu_ids"];
      if (!ids.is_array() ||
          !std::all_of(ids.begin(), ids.end(), [](const Json& v) { return v.is_string(); }))
        return Bad(name, "ignored_gpu_ids", "must be a list of GPU UUIDs");
      p.nvidia.ignored_gpu_ids = ids.get<std::vector<std::string>>();
    }
    if (absl::Status s = ReadString(name, plugin_config, "nvml_library", p.nvidia.nvml_library);
        !s.ok())
      return s;
  }
  config.device_plugins.push_back(std::move(p));
  return absl::OkStatus();
}

std::vector<devices::ConfiguredPlugin> MakeDevicePlugins(
    const std::vector<DevicePluginConfig>& configs) {
  std::vector<devices::ConfiguredPlugin> out;
  for (const DevicePluginConfig& c : configs) {
    devices::DevicePluginPtr plugin;
    switch (c.kind) {
      case DevicePluginConfig::Kind::kExample:
        plugin = std::make_shared<devices::ExamplePlugin>(c.example);
        break;
      case DevicePluginConfig::Kind::kNvidia:
        plugin = devices::MakeNvidiaPlugin(c.nvidia);
        break;
      case DevicePluginConfig::Kind::kExternal:
        plugin = devices::MakeExternalPlugin(c.external);
        break;
    }
    out.push_back({.plugin = std::move(plugin), .fingerprint_period = c.fingerprint_period});
  }
  return out;
}

}  // namespace drover::agent
