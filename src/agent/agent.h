// The agent: composition of the HTTP API, the embedded server and the client on one
// control loop (DESIGN.md §1, §3). In -dev mode it is server and client at once.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/http_limits.h"
#include "client/gc.h"
#include "common/clock.h"
#include "devices/example_plugin.h"
#include "devices/external/external_plugin.h"
#include "devices/nvidia/nvidia_plugin.h"
#include "drivers/docker/plugin_config.h"
#include "model/node.h"

namespace drover::agent {

// A device plugin from a `plugin "<name>"` block (docs/devices.md).
struct DevicePluginConfig {
  enum class Kind { kExample, kNvidia, kExternal };
  Kind kind = Kind::kExample;
  std::string name;  // the block's label
  devices::ExamplePluginConfig example;
  devices::NvidiaPluginConfig nvidia;
  devices::ExternalPluginConfig external;
  // config.fingerprint_period; zero: the device manager's default (5s).
  common::Duration fingerprint_period{0};
};

// server { etcd { ... } } and -etcd-endpoints: servers that share their state in etcd
// (docs/ha.md). Without endpoints a server keeps its state in its own data dir.
struct EtcdConfig {
  std::vector<std::string> endpoints;  // "host:port" or "http://host:port"
  std::string prefix = "/drover";
  common::Duration dial_timeout = std::chrono::seconds(5);
  common::Duration lease_ttl = std::chrono::seconds(10);
};

struct AgentConfig {
  // Roles (docs/cluster.md): -dev is both in one process; otherwise -server
  // (server.enabled), -client (client.enabled) or both. A client-only agent reaches
  // `servers` over the network.
  bool dev_mode = false;
  bool server_enabled = false;
  bool client_enabled = false;
  // The servers' RPC addresses ("host:port", default port 4647): -servers or
  // client.servers.
  std::vector<std::string> servers;
  std::string bind_addr = "127.0.0.1";
  // advertise { http, rpc }: how other servers reach this one ("host" or "host:port";
  // empty: the bound address). A server with etcd that binds a wildcard needs them.
  std::string advertise_http;
  std::string advertise_rpc;
  int http_port = 4646;  // 0 = pick a free port (written to <data_dir>/http.addr)
  // A server's RPC listener, for clients on other machines (not opened in -dev).
  int rpc_port = 4647;  // 0 = pick a free port (written to <data_dir>/rpc.addr)
  // server.bootstrap_expect / -bootstrap-expect: above 1 only with etcd, where the
  // first leader of an empty state waits until that many servers are up.
  int bootstrap_expect = 1;
  EtcdConfig etcd;
  // The server block's heartbeat settings (server::ServerConfig).
  common::Duration min_heartbeat_ttl = std::chrono::seconds(10);
  double max_heartbeats_per_second = 50;
  common::Duration heartbeat_grace = std::chrono::seconds(10);
  // The server block's garbage collection (server/core_gc.h): Nomad's names and
  // defaults.
  common::Duration eval_gc_threshold = std::chrono::hours(1);
  common::Duration batch_eval_gc_threshold = std::chrono::hours(24);
  common::Duration job_gc_threshold = std::chrono::hours(4);
  common::Duration node_gc_threshold = std::chrono::hours(24);
  common::Duration job_gc_interval = std::chrono::minutes(5);
  // server.job_tracked_versions: how many versions of a job are kept (Nomad's 6).
  size_t job_tracked_versions = 6;
  // server.event_buffer_size: the events the event stream keeps (Nomad's 100).
  size_t event_buffer_size = 100;
  // Empty in -dev: a fresh temp dir, removed on exit. Given, the server and client
  // state are kept there (docs/state.md): an agent that was killed, or (without -dev)
  // stopped, starts again where it was and re-attaches the tasks that kept running.
  // A -dev agent stops its tasks when it is stopped, as Nomad's does.
  std::string data_dir;
  // A state DB that is damaged is renamed to `<file>.corrupt-<unix time>` and an empty
  // one is started, instead of refusing to start.
  bool reset_corrupt_state = false;
  std::string node_name;  // default: the host name
  std::string region = "global";
  std::string datacenter = "dc1";
  std::string log_level = "info";

  // The client block of agent configuration files (docs/agent-config.md).
  std::string node_class;
  std::string node_pool;  // empty: "default"
  std::map<std::string, std::string> meta;
  model::NodeReservedResources reserved;
  client::GcConfig gc;
  common::Duration stats_interval = std::chrono::seconds(1);  // telemetry.collection_interval
  // The rest of the telemetry block (docs/metrics.md).
  bool prometheus_metrics = false;  // GET /v1/metrics?format=prometheus answers
  bool disable_hostname = false;    // gauges carry no "host" label
  bool publish_allocation_metrics = false;
  bool publish_node_metrics = false;
  // Host directories linked into exec tasks' chroots; unset: Nomad's default list.
  std::optional<std::map<std::string, std::string>> chroot_env;
  // raw_exec runs tasks without isolation: on in -dev unless configured, off otherwise
  // unless `plugin "raw_exec" { config { enabled = true } }` (or the client option
  // driver.raw_exec.enable) turns it on.
  std::optional<bool> raw_exec_enabled;
  // client options driver.allowlist / driver.denylist: drivers to offer or hide.
  std::set<std::string> driver_allowlist;  // empty: every driver
  std::set<std::string> driver_denylist;
  // Device plugins, in configuration order.
  std::vector<DevicePluginConfig> device_plugins;
  // plugin "docker" { config { ... } } (docs/drivers.md#docker).
  drivers::docker::PluginConfig docker;
  // server.default_scheduler_config.memory_oversubscription_enabled.
  bool memory_oversubscription = false;
  // The HTTP API's limits and browser policy (the limits and http blocks).
  api::HttpLimits http_limits;
  // A server's RPC port (limits.rpc_max_conns_per_client, Nomad's, 0 for none; and
  // limits.rpc_max_conns, Drover's): every node of the cluster holds a connection to
  // it, so the total defaults to what the descriptor limit allows. The HTTP limits
  // apply otherwise.
  size_t rpc_max_conns_per_client = 100;
  std::optional<size_t> rpc_max_conns;
  api::BrowserPolicy browser;
};

// Runs the agent until SIGINT or SIGTERM. Returns the process exit code; startup
// errors (port taken, unusable data dir) are printed and give exit code 1.
int RunAgent(const AgentConfig& config);

}  // namespace drover::agent
