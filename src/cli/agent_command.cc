// drover agent: validate the flags into an AgentConfig and run the agent in this process.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/commands.h"

#include "agent/agent.h"
#include "agent/config_file.h"

namespace drover::cli {

namespace {

// -bootstrap-expect: 1, on a server; several servers come with the HA issue.
absl::Status CheckBootstrapExpect(const AgentOptions& options, const agent::AgentConfig& config) {
  if (options.bootstrap_expect == -1)
    return absl::OkStatus();
  if (!config.server_enabled || options.dev) {
    return absl::InvalidArgumentError(
        "-bootstrap-expect is for a server agent (-server); -dev bootstraps itself");
  }
  if (options.bootstrap_expect < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid -bootstrap-expect ", options.bootstrap_expect, ": must be 1"));
  }
  if (options.bootstrap_expect > 1) {
    return absl::InvalidArgumentError(
        "-bootstrap-expect above 1: clusters of several servers are not supported by Drover "
        "yet (one server per cluster)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<agent::AgentConfig> BuildAgentConfig(const AgentOptions& options) {
  agent::AgentConfig config;
  config.dev_mode = options.dev;
  if (absl::Status s = agent::ApplyConfigFiles(options.config_paths, config); !s.ok()) {
    return s;
  }
  config.server_enabled = config.server_enabled || options.server;
  config.client_enabled = config.client_enabled || options.client;
  if (!options.servers.empty()) {
    config.servers.clear();
    for (absl::string_view s : absl::StrSplit(options.servers, ',', absl::SkipWhitespace()))
      config.servers.emplace_back(absl::StripAsciiWhitespace(s));
  }
  if (options.rpc_port >= 0) {
    if (options.rpc_port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid -rpc-port ", options.rpc_port, ": must be 0-65535"));
    }
    config.rpc_port = options.rpc_port;
  }
  if (!options.data_dir.empty()) {
    config.data_dir = options.data_dir;
  }
  if (absl::Status s = CheckBootstrapExpect(options, config); !s.ok())
    return s;
  if (!options.dev && config.data_dir.empty()) {
    return absl::InvalidArgumentError("Must specify either a data directory or -dev");
  }
  if (config.dev_mode) {
    config.server_enabled = config.client_enabled = true;
  } else if (!config.server_enabled && !config.client_enabled) {
    return absl::InvalidArgumentError(
        "Must specify either server, client or dev mode for the agent (-server, -client or "
        "-dev)");
  }
  if (absl::Status s = agent::NormalizeServerAddresses(config.servers); !s.ok())
    return s;
  if (config.server_enabled && !config.servers.empty()) {
    return absl::InvalidArgumentError(
        "-servers (client.servers) is for client-only agents: this agent's client uses its own "
        "server, and joining other servers comes with several servers");
  }
  if (config.client_enabled && !config.server_enabled && config.servers.empty()) {
    return absl::InvalidArgumentError(
        "A client-only agent needs its servers: -servers host:port[,host:port] or "
        "client { servers = [...] }");
  }
  config.reset_corrupt_state = options.reset_corrupt_state;
  if (!options.bind.empty()) {
    config.bind_addr = options.bind;
  }
  if (options.http_port >= 0) {
    if (options.http_port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid -http-port ", options.http_port, ": must be 0-65535"));
    }
    config.http_port = options.http_port;
  }
  if (!options.node.empty()) {
    config.node_name = options.node;
  }
  if (!options.log_level.empty()) {
    const std::string level = absl::AsciiStrToLower(options.log_level);
    if (level != "trace" && level != "debug" && level != "info" && level != "warn" &&
        level != "error" && level != "off") {
      return absl::InvalidArgumentError(absl::StrCat("Invalid log level: ", options.log_level));
    }
    config.log_level = level;
  }
  if (!options.region.empty()) {
    config.region = options.region;
  }
  if (!options.datacenter.empty()) {
    config.datacenter = options.datacenter;
  }
  return config;
}

int RunAgentCommand(const AgentOptions& options, Ui& ui,
                    const std::function<int(const agent::AgentConfig&)>& run_agent) {
  absl::StatusOr<agent::AgentConfig> config = BuildAgentConfig(options);
  if (!config.ok()) {
    ui.Error(std::string(config.status().message()));
    return kExitError;
  }
  return run_agent(*config);
}

}  // namespace drover::cli
