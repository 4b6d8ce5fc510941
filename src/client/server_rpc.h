// How a client talks to the servers. In -dev mode the implementation calls the
// embedded server directly (agent/in_process_rpc.h); a networked implementation over
// the HTTP API comes with multi-node support. Methods are coroutines on the caller's
// control loop.
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

  virtual asio::awaitable<absl::Status> RegisterNode(model::Node node) = 0;
  // NotFound when the server does not know the node (it must register again).
  virtual asio::awaitable<absl::Status> Heartbeat(std::string node_id) = 0;
  // Blocking query for the node's allocations: returns once the allocation table index
  // exceeds `min_index` or `max_wait` passes.
  virtual asio::awaitable<absl::StatusOr<NodeAllocations>> GetNodeAllocations(
      std::string node_id, uint64_t min_index, common::Duration max_wait) = 0;
  virtual asio::awaitable<absl::Status> UpdateAllocations(
      std::vector<model::AllocClientUpdate> updates) = 0;
};

}  // namespace drover::client
