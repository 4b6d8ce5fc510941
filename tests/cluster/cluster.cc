#include "tests/cluster/cluster.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace drover::cluster {

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
  server_conf_ = (conf_.path() / "server.hcl").string();
  std::ofstream(server_conf_) << "server {\n  min_heartbeat_ttl = \"1s\"\n  heartbeat_grace = "
                                 "\"2s\"\n}\n"
                              << options_.server_config << "\n";
  client_conf_ = (conf_.path() / "client.hcl").string();
  std::ofstream(client_conf_) << "plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"
                              << options_.client_config << "\n";
  server_ = std::make_unique<AgentProcess>(
      std::vector<std::string>{"-config", server_conf_, "-node", "server"},
      AgentProcess::Role::kServer);
  if (!server_->ok() || server_->rpc_address().empty())
    return;
  // A restarted server comes back on the same RPC port: that is what clients know.
  server_->SetFlag("-rpc-port",
                   server_->rpc_address().substr(server_->rpc_address().rfind(':') + 1));
  for (int i = 0; i < options_.clients; ++i)
    AddClient();
}

Cluster::~Cluster() {
  // Each stopped before any is destroyed: destroying one kills every process the test
  // still has, and the others must not be left with a pid that is gone.
  for (auto& c : clients_)
    c->Stop();
  server_->Stop();
  clients_.clear();
  server_.reset();
}

bool Cluster::ok() const {
  if (!server_->ok() || server_->rpc_address().empty())
    return false;
  for (const auto& c : clients_) {
    if (!c->ok())
      return false;
  }
  return true;
}

AgentProcess& Cluster::AddClient() {
  const std::string name = "client-" + std::to_string(clients_.size());
  clients_.push_back(std::make_unique<AgentProcess>(
      std::vector<std::string>{"-config", client_conf_, "-servers", server_->rpc_address(), "-node",
                               name},
      AgentProcess::Role::kClient));
  return *clients_.back();
}

std::string Cluster::Logs() const {
  std::ostringstream out;
  out << "---- server log ----\n" << server_->log();
  for (size_t i = 0; i < clients_.size(); ++i)
    out << "---- client-" << i << " log ----\n" << clients_[i]->log();
  return out.str();
}

bool Cluster::WaitForReadyNodes(size_t n, std::chrono::seconds timeout) {
  return testing::WaitFor(
      [&] {
        absl::StatusOr<cli::HttpResponse> r = server_->http().Do("GET", "/v1/nodes");
        if (!r.ok())
          return false;
        auto nodes = codec::ParseJson(r->body);
        if (!nodes.ok())
          return false;
        size_t ready = 0;
        for (const auto& node : *nodes)
          ready += node["Status"] == "ready" ? 1 : 0;
        return ready == n;
      },
      timeout);
}

std::string Cluster::NodeId(size_t i) {
  return clients_.at(i)->Get("/v1/agent/self")["config"]["Client"]["NodeID"].get<std::string>();
}

}  // namespace drover::cluster
