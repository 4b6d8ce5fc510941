// The agent's metrics (docs/metrics.md): one registry, and the collectors that read the
// agent's parts when GET /v1/metrics asks. Names are Nomad's where Nomad has one
// (nomad.client.*, nomad.runtime.*, nomad.nomad.*), Drover's own under drover.*.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "common/cancellation.h"
#include "metrics/registry.h"
#include "model/usage.h"

namespace drover::api {
class HttpServer;
}
namespace drover::client {
class Client;
class HostStatsCollector;
}  // namespace drover::client
namespace drover::drivers {
class SupervisorLink;
}
namespace drover::server {
class Server;
}
namespace drover::state {
class StateDb;
}

namespace drover::agent {

class AgentMetrics {
 public:
  // `hostname` labels gauges unless config.disable_hostname.
  AgentMetrics(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
               const AgentConfig& config, const std::string& hostname);
  ~AgentMetrics();
  AgentMetrics(const AgentMetrics&) = delete;
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  metrics::Registry& registry() { return registry_; }

  // Each adds the collectors of one part; what is passed must outlive this object.
  void WatchServer(server::Server& server);
  // `alloc_dir`: where allocations live (the host's disk gauges are of its file system).
  void WatchClient(client::Client& client, const drivers::SupervisorLink& link,
                   const state::StateDb* db, const std::filesystem::path& alloc_dir);
  void WatchHttp(const api::HttpServer& http, std::string listener);

  // With a client and publish_node_metrics: samples the host every
  // collection_interval (on the pool) for the nomad.client.host.* gauges.
  void Start();
  void Stop();

 private:
  asio::awaitable<void> HostLoop(common::CancellationScopePtr stop);
  // The collectors WatchClient adds (on the control loop).
  void CollectClient(client::Client& client, metrics::GaugeSink& sink);
  void CollectSupervisorAndStateDb(const drivers::SupervisorLink& link, const state::StateDb* db,
                                   metrics::GaugeSink& sink);

  asio::any_io_executor executor_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  const AgentConfig& config_;
  metrics::Registry registry_;
  client::Client* client_ = nullptr;
  // Its own: CPU percentages are of the time since the previous sample, so sharing the
  // client's (which GET /v1/client/stats samples) would shorten both windows.
  std::unique_ptr<client::HostStatsCollector> host_collector_;
  std::optional<model::HostStats> host_;  // the latest host sample
  common::CancellationScopePtr stop_;
};

}  // namespace drover::agent
