// ServerRpc for -dev mode: the client calls the embedded server directly on the same
// control loop (no serialization, no network).
#pragma once

#include "client/server_rpc.h"
#include "server/server.h"

namespace drover::agent {

class InProcessRpc final : public client::ServerRpc {
 public:
  // `server` must outlive this object.
  explicit InProcessRpc(server::Server& server) : server_(server) {}

  // client::ServerRpc
  asio::awaitable<absl::StatusOr<common::Duration>> RegisterNode(model::Node node) override;
  asio::awaitable<absl::StatusOr<common::Duration>> Heartbeat(std::string node_id) override;
  asio::awaitable<absl::StatusOr<client::NodeAllocations>> GetNodeAllocations(
      std::string node_id, uint64_t min_index, common::Duration max_wait) override;
  asio::awaitable<absl::Status> UpdateAllocations(
      std::vector<model::AllocClientUpdate> updates) override;
  asio::awaitable<absl::Status> EmitNodeEvents(std::string node_id,
                                               std::vector<model::NodeEvent> events) override;
  asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> GetPreviousAlloc(
      std::string node_id, std::string alloc_id, uint64_t min_index,
      common::Duration max_wait) override;

 private:
  server::Server& server_;
};

}  // namespace drover::agent
