#include "agent/in_process_rpc.h"

namespace drover::agent {

asio::awaitable<absl::Status> InProcessRpc::RegisterNode(model::Node node) {
  co_return server_.RegisterNode(std::move(node));
}

asio::awaitable<absl::Status> InProcessRpc::Heartbeat(std::string node_id) {
  co_return server_.Heartbeat(node_id);
}

asio::awaitable<absl::StatusOr<client::NodeAllocations>> InProcessRpc::GetNodeAllocations(
    std::string node_id, uint64_t min_index, common::Duration max_wait) {
  std::vector<server::Table> tables{server::Table::kAllocs};
  const uint64_t index = co_await server_.state().BlockUntil(tables, min_index, max_wait);
  client::NodeAllocations out;
  out.allocs = server_.state().AllocsByNode(node_id);
  out.index = index;
  // What a client runs must be on the servers' disk first (as with a Raft commit
  // index): a crash cannot forget an allocation whose tasks already started.
  if (absl::Status durable = co_await server_.state().Flush(); !durable.ok())
    co_return durable;
  co_return out;
}

asio::awaitable<absl::Status> InProcessRpc::UpdateAllocations(
    std::vector<model::AllocClientUpdate> updates) {
  server_.UpdateAllocsFromClient(updates);
  // Acknowledged only once durable, as a Raft apply would be: the client records the
  // acknowledgement and does not send the same state again after a restart.
  co_return co_await server_.state().Flush();
}

}  // namespace drover::agent
