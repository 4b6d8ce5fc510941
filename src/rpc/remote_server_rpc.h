// ServerRpc over the network (docs/cluster.md): a client-only agent's way to its
// servers. Every call carries the node's ID and secret (learnt from RegisterNode) and
// goes to the server that answered last; a server that cannot be reached is skipped
// for the next one in the list, so the client fails over without losing a call. When
// none answers, the call fails with Unavailable and the client retries later, its
// tasks running on.
#pragma once

#include <string>
#include <vector>

#include "client/server_rpc.h"
#include "common/event.h"
#include "rpc/http_call.h"

namespace drover::rpc {

struct RemoteServerRpcOptions {
  // "host:port" of each server's RPC listener, tried in this order at first.
  std::vector<std::string> servers;
  std::string region = "global";
  // Each call's limit, besides the wait an allocations query asks the server for.
  common::Duration call_timeout = std::chrono::seconds(30);
  HttpCallLimits limits;
};

class RemoteServerRpc final : public client::ServerRpc {
 public:
  // `pool` (where large answers are decoded) must outlive this object.
  RemoteServerRpc(asio::thread_pool& pool, RemoteServerRpcOptions options);

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

  // The server that answered last ("host:port").
  const std::string& current_server() const { return options_.servers[current_]; }

 private:
  // Sends `call` to the current server, then to each other one until one answers.
  // A non-200 answer is the server's: returned as its Status, not retried elsewhere
  // (except 503, a server that cannot serve now).
  asio::awaitable<absl::StatusOr<HttpReply>> Call(HttpCall call, common::Duration timeout);
  // Call, sent again to the new server when another call (a heartbeat) moved away from
  // the one it waits on. For idempotent calls.
  asio::awaitable<absl::StatusOr<HttpReply>> Switching(HttpCall call, common::Duration timeout);

  asio::thread_pool& pool_;
  RemoteServerRpcOptions options_;
  size_t current_ = 0;
  // Remembers the TTL's half as each server's time to answer a heartbeat.
  absl::StatusOr<common::Duration> LearnTtl(absl::StatusOr<common::Duration> ttl);

  std::string node_id_;
  std::string secret_id_;
  common::Duration heartbeat_timeout_ = options_.call_timeout;
  // Set (and dropped) when the server in use changes.
  std::shared_ptr<common::Event> switched_;
};

}  // namespace drover::rpc
