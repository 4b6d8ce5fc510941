// How a client talks to the servers. In -dev mode the implementation calls the
// embedded server directly (agent/in_process_rpc.h); a client-only agent reaches them
// over the network (rpc/remote_server_rpc.h, docs/cluster.md). Methods are coroutines
// on the caller's control loop.
//
// Errors: Unavailable when no server could be reached (the client keeps running its
// tasks and retries); NotFound from Heartbeat when the servers do not know the node (it
// must register again); PermissionDenied when they refuse the node's identity.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/clock.h"
#include "model/allocation.h"
#include "model/node.h"
#include "model/prev_alloc_info.h"

namespace drover::client {

struct NodeAllocations {
  std::vector<std::shared_ptr<const model::Allocation>> allocs;
  uint64_t index = 0;
};

class ServerRpc {
 public:
  virtual ~ServerRpc() = default;
  ServerRpc() = default;
  ServerRpc(const ServerRpc&) = delete;
  ServerRpc& operator=(const ServerRpc&) = delete;

  // Both answer with the node's heartbeat TTL: the next heartbeat is due within it.
  virtual asio::awaitable<absl::StatusOr<common::Duration>> RegisterNode(model::Node node) = 0;
  virtual asio::awaitable<absl::StatusOr<common::Duration>> Heartbeat(std::string node_id) = 0;
  // Blocking query for the node's allocations: returns once the allocation table index
  // exceeds `min_index` or `max_wait` passes.
  virtual asio::awaitable<absl::StatusOr<NodeAllocations>> GetNodeAllocations(
      std::string node_id, uint64_t min_index, common::Duration max_wait) = 0;
  virtual asio::awaitable<absl::Status> UpdateAllocations(
      std::vector<model::AllocClientUpdate> updates) = 0;
  // Events about the node itself (a driver's health), at most
  // model::kMaxNodeEventsPerCall at once.
  virtual asio::awaitable<absl::Status> EmitNodeEvents(std::string node_id,
                                                       std::vector<model::NodeEvent> events) = 0;
  // Blocking query for the allocation that `alloc_id` (one of the node's) replaces:
  // returns at once for `min_index` 0, else once the servers' index passes it and the
  // previous allocation is done, or after `max_wait`. PermissionDenied when `alloc_id`
  // is not the node's; FailedPrecondition when it replaces none.
  virtual asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> GetPreviousAlloc(
      std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait) = 0;
};

}  // namespace drover::client
