#include "agent/in_process_rpc.h"

namespace drover::agent {

asio::awaitable<absl::StatusOr<common::Duration>> InProcessRpc::RegisterNode(model::Node node) {
  co_return server_.RegisterNode(std::move(node));
}

asio::awaitable<absl::StatusOr<common::Duration>> InProcessRpc::Heartbeat(std::string node_id) {
  co_return server_.Heartbeat(node_id);
}

asio::awaitable<absl::StatusOr<client::NodeAllocations>> InProcessRpc::GetNodeAllocations(
    std::string node_id, uint64_t min_index, common::Duration max_wait) {
  absl::StatusOr<server::NodeAllocs> got =
      co_await server_.WatchNodeAllocs(std::move(node_id), min_index, max_wait);
  if (!got.ok())
    co_return got.status();
  co_return client::NodeAllocations{.allocs = {got->allocs.begin(), got->allocs.end()},
                                    .index = got->index};
}

asio::awaitable<absl::Status> InProcessRpc::UpdateAllocations(
    std::vector<model::AllocClientUpdate> updates) {
  // Every update comes from the node this agent runs (one client per agent).
  if (updates.empty())
    co_return absl::OkStatus();
  std::string node_id = updates.front().node_id;
  co_return co_await server_.UpdateAllocsDurably(std::move(node_id), std::move(updates));
}

asio::awaitable<absl::Status> InProcessRpc::EmitNodeEvents(std::string node_id,
                                                           std::vector<model::NodeEvent> events) {
  co_return server_.EmitNodeEvents(node_id, std::move(events));
}

asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> InProcessRpc::GetPreviousAlloc(
    std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait) {
  co_return co_await server_.WatchPreviousAlloc(std::move(node_id), std::move(alloc_id), min_index,
                                                max_wait);
}

}  // namespace drover::agent
