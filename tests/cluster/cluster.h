// A cluster of real agents on 127.0.0.1 for tests: one server (-server) and N
// client-only agents (-client -servers <the server's RPC address>), each its own
// process with its own data dir and ephemeral ports. Heartbeats are fast (a 1 s minimum
// TTL and 2 s grace) so failure tests run in seconds, and raw_exec is enabled on the
// clients. Every agent, and every task they leave behind, is gone after destruction.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/agent_process.h"

namespace drover::cluster {

using integration::AgentProcess;
using integration::CliResult;

struct ClusterOptions {
  int clients = 3;
  // HCL added to the server's and to each client's agent configuration.
  std::string server_config;
  std::string client_config;
};

class Cluster {
 public:
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // The server and every client started.
  bool ok() const;
  AgentProcess& server() { return *server_; }
  AgentProcess& client(size_t i) { return *clients_.at(i); }
  size_t clients() const { return clients_.size(); }
  // Starts one more client ("client-<n>"); check ok() on it.
  AgentProcess& AddClient();
  // Every agent's log, labelled, for failure messages.
  std::string Logs() const;

  // Waits until the server lists `n` nodes with status "ready".
  bool WaitForReadyNodes(size_t n, std::chrono::seconds timeout = std::chrono::seconds(30));
  // The node ID of client `i` (from its /v1/agent/self).
  std::string NodeId(size_t i);

 private:
  ClusterOptions options_;
  testing::TempDir conf_;
  std::string server_conf_;
  std::string client_conf_;
  std::unique_ptr<AgentProcess> server_;
  std::vector<std::unique_ptr<AgentProcess>> clients_;
};

}  // namespace drover::cluster
