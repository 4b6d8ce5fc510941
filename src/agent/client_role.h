// The client half of an agent: the node's supervisor link, its drivers and device
// plugins, the way to the servers (in process, or over the network for a client-only
// agent), and the Client itself. Built in that order and destroyed in reverse.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"

#include "agent/agent.h"
#include "client/client.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/exec/exec_driver.h"
#include "drivers/mock/mock_driver.h"
#include "drivers/raw_exec/raw_exec_driver.h"
#include "drivers/supervised/supervisor_link.h"
#include "rpc/peer_fetcher.h"

namespace drover::server {
class Server;
}

namespace drover::agent {

class ClientRole {
 public:
  // `server`: the agent's own server, reached in process; null for a client-only
  // agent, which reaches config.servers. Everything passed must outlive the role.
  ClientRole(asio::io_context& io, asio::thread_pool& pool, common::Clock& clock,
             const AgentConfig& config, const std::filesystem::path& data_dir, state::StateDb* db,
             server::Server* server, const std::string& http_addr);
  ~ClientRole();
  ClientRole(const ClientRole&) = delete;
  ClientRole& operator=(const ClientRole&) = delete;

  client::Client& client() { return *client_; }
  const drivers::SupervisorLink& supervisor() const { return supervisor_; }

  // Starts the supervisor, then the client (which restores what it ran), then kills
  // tasks the supervisor holds that no allocation owns. An error is fatal to the agent.
  asio::awaitable<absl::Status> Start();
  // -dev: stops every task and the supervisor. Otherwise tasks keep running for the
  // next agent on this data dir.
  asio::awaitable<void> Shutdown(bool destroy);

 private:
  drivers::SupervisorLink supervisor_;
  drivers::RawExecDriver raw_exec_;
  drivers::ExecDriver exec_;
  drivers::MockDriver mock_;
  drivers::docker::DockerDriver docker_;
  std::unique_ptr<devices::DeviceManager> device_manager_;
  std::unique_ptr<client::ServerRpc> rpc_;
  // A previous allocation's data from another node; a minute at most without progress.
  rpc::PeerSnapshotFetcher snapshot_fetcher_{std::chrono::minutes(1)};
  std::unique_ptr<client::Client> client_;
};

}  // namespace drover::agent
