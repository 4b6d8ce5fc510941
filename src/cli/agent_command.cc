// drover agent: validate the flags into an AgentConfig and run the agent in this process.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/commands.h"

#include "agent/agent.h"
#include "agent/config_file.h"

namespace drover::cli {

namespace {

// -bootstrap-expect and server.bootstrap_expect: several servers share their state in
// etcd; without it there is one.
absl::Status CheckBootstrapExpect(const AgentOptions& options, agent::AgentConfig& config) {
  if (options.bootstrap_expect != -1) {
    if (!config.server_enabled || options.dev) {
      return absl::InvalidArgumentError(
          "-bootstrap-expect is for a server agent (-server); -dev bootstraps itself");
    }
    if (options.bootstrap_expect < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Invalid -bootstrap-expect ", options.bootstrap_expect, ": must be at least 1"));
    }
    config.bootstrap_expect = options.bootstrap_expect;
  }
  if (config.bootstrap_expect > 1 && config.etcd.endpoints.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bootstrap_expect = ", config.bootstrap_expect,
        ": several servers share their state in etcd, and none is configured. Set "
        "server { etcd { endpoints = [\"127.0.0.1:2379\"] } } in the agent configuration, or "
        "-etcd-endpoints 127.0.0.1:2379 (docs/ha.md)"));
  }
  return absl::OkStatus();
}

// -etcd-endpoints, and what etcd asks of the agent's roles.
absl::Status ApplyEtcdOptions(const AgentOptions& options, agent::AgentConfig& config) {
  if (!options.etcd_endpoints.empty()) {
    config.etcd.endpoints.clear();
    for (absl::string_view e : absl::StrSplit(options.etcd_endpoints, ',', absl::SkipWhitespace()))
      config.etcd.endpoints.emplace_back(absl::StripAsciiWhitespace(e));
    for (const std::string& e : config.etcd.endpoints) {
      if (absl::StartsWith(e, "https://"))
        return absl::InvalidArgumentError(
            "-etcd-endpoints: TLS to etcd is not supported by Drover yet (use http:// endpoints)");
    }
  }
  if (config.etcd.endpoints.empty())
    return absl::OkStatus();
  if (config.dev_mode)
    return absl::InvalidArgumentError("-dev keeps its state in memory: etcd is for -server agents");
  if (!config.server_enabled)
    return absl::InvalidArgumentError("etcd endpoints are for a server agent (-server)");
  if (config.client_enabled) {
    return absl::InvalidArgumentError(
        "a server that shares its state in etcd cannot also be a client in Drover yet: run the "
        "client as its own agent (-client -servers ...)");
  }
  return absl::OkStatus();
}

// The other servers forward writes to the leader's advertised RPC address: a wildcard
// bind address cannot be it.
absl::Status CheckAdvertise(const agent::AgentConfig& config) {
  if (config.etcd.endpoints.empty())
    return absl::OkStatus();
  const bool wildcard =
      config.bind_addr == "0.0.0.0" || config.bind_addr == "::" || config.bind_addr == "[::]";
  if (wildcard && (config.advertise_rpc.empty() || config.advertise_http.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a server with etcd that binds ", config.bind_addr,
        " must say where the other servers reach it: set advertise { http = \"10.0.0.1\" "
        "rpc = \"10.0.0.1\" } (its own address) in the agent configuration"));
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
  if (absl::Status s = ApplyEtcdOptions(options, config); !s.ok())
    return s;
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
  if (absl::Status s = CheckAdvertise(config); !s.ok())
    return s;
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
