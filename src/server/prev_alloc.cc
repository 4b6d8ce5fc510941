// Server::WatchPreviousAlloc: what a node needs to know about the allocation one of its
// allocations replaces (model/prev_alloc_info.h).
#include <algorithm>

#include "common/derived_token.h"
#include "server/server.h"

namespace drover::server {

namespace {

// Whether a group's ephemeral disk moves to another node (`migrate = true`; `sticky`
// alone asks only for the same node, as in Nomad).
bool Migrates(const model::Allocation& a) {
  const model::TaskGroup* g = a.Group();
  return g != nullptr && g->ephemeral_disk && g->ephemeral_disk->migrate;
}

}  // namespace

absl::StatusOr<model::PrevAllocInfo> Server::DescribePreviousAlloc(
    const std::string& node_id, const std::string& alloc_id) const {
  AllocPtr alloc = state_.GetAlloc(alloc_id);
  if (!alloc || alloc->node_id != node_id)
    return absl::PermissionDeniedError("allocation " + alloc_id + " is not on node " + node_id);
  if (alloc->previous_allocation.empty())
    return absl::FailedPreconditionError("allocation " + alloc_id + " replaces none");
  model::PrevAllocInfo info;
  info.alloc_id = alloc->previous_allocation;
  info.index =
      std::max({state_.TableIndex(Table::kAllocs), state_.TableIndex(Table::kNodes), uint64_t{1}});
  AllocPtr prev = state_.GetAlloc(alloc->previous_allocation);
  if (!prev) {
    info.gone = true;
    info.done = true;
    return info;
  }
  info.client_status = prev->client_status;
  info.node_id = prev->node_id;
  NodePtr node = state_.GetNode(prev->node_id);
  if (node) {
    info.node_status = node->status;
    info.node_http_addr = node->http_addr;
  }
  const bool node_lost = !node || node->status == model::kNodeStatusDown;
  info.done = prev->ClientTerminal() || prev->client_status == model::kClientUnknown || node_lost;
  // The token opens the previous allocation's data: only once it has stopped (never for
  // one that runs on, e.g. after its node reconnected), and only for a replacement that
  // is still meant to run.
  if (info.done && !node_lost && Migrates(*alloc) && !alloc->ServerTerminal() &&
      !alloc->ClientTerminal() && prev->ClientTerminal() &&
      prev->client_status != model::kClientLost)
    info.migrate_token = common::MigrateToken(node->secret_id, prev->id);
  return info;
}

asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> Server::WatchPreviousAlloc(
    std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait) {
  const common::Time deadline = common::AddSaturating(clock_.Now(), max_wait);
  absl::StatusOr<model::PrevAllocInfo> info = DescribePreviousAlloc(node_id, alloc_id);
  // Rare (a replacement waiting on another node), so each change to allocations or
  // nodes may wake it: it answers only once the previous allocation is done.
  const std::vector<Table> tables{Table::kAllocs, Table::kNodes};
  while (min_index != 0 && info.ok() && !info->done && clock_.Now() < deadline) {
    min_index = std::max(min_index, info->index);
    const common::Duration left = deadline - clock_.Now();
    co_await state_.BlockUntil(tables, min_index, left);
    info = DescribePreviousAlloc(node_id, alloc_id);
  }
  if (absl::Status durable = co_await state_.Flush(); !durable.ok())
    co_return durable;
  co_return info;
}

}  // namespace drover::server
