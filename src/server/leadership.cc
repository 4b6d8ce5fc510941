// The server's leadership terms (docs/ha.md): a server without etcd leads from Start to
// Stop; with etcd its HA coordinator begins and ends terms. A term's loops (the
// evaluation worker, the drain loop, the heartbeat monitor) run until it ends.
#include <algorithm>

#include "common/logging.h"
#include "common/offload.h"
#include "server/server.h"

namespace drover::server {

void Server::Start() {
  if (!config_.ha)
    BeginTerm();
}

void Server::Stop() {
  stop_->Cancel();
}

absl::Status Server::NotLeaderError() {
  return absl::UnavailableError(
      "this server is not the cluster leader (writes go to the leader; see "
      "/v1/status/leader)");
}

void Server::EstablishLeadership() {
  if (leader_ || stop_->cancelled())
    return;
  leader_ = true;
  BeginTerm();
}

void Server::BeginTerm() {
  if (term_)
    term_->Cancel();  // at most one set of loops
  ++term_count_;
  term_ = stop_->Child();
  // A new leader (or a restarted server) picks up where the last one left off: pending
  // evaluations are processed again, in the order they were made, and every node that
  // is not down gets a full heartbeat TTL to check in before it is marked down (as
  // after a Nomad leader election).
  std::vector<EvalPtr> pending;
  for (const EvalPtr& e : state_.ListEvals("*", "")) {
    if (e->status == model::kEvalPending)
      pending.push_back(e);
  }
  std::sort(pending.begin(), pending.end(),
            [](const EvalPtr& a, const EvalPtr& b) { return a->create_index < b->create_index; });
  for (const EvalPtr& e : pending)
    Enqueue(e->id);
  for (const NodePtr& n : state_.ListNodes("")) {
    if (n->status == model::kNodeStatusDisconnected) {
      // Its window runs from when it disconnected, whatever the restart took.
      heartbeat_deadline_[n->id] = common::AddSaturating(
          common::FromUnixNanos(n->status_updated_at * 1'000'000'000), DisconnectWindow(n->id));
    } else if (n->status != model::kNodeStatusDown) {
      heartbeat_deadline_[n->id] = clock_.Now() + NextHeartbeatTtl() + config_.heartbeat_grace;
    }
    if (n->drain_strategy)
      draining_.insert(n->id);
  }
  common::SpawnDetached(executor_, EvalWorker(term_), "evaluation worker");
  common::SpawnDetached(executor_, DrainLoop(term_), "drain loop");
  common::SpawnDetached(executor_, DeploymentLoop(term_), "deployment watcher");
  common::SpawnDetached(executor_, HeartbeatMonitor(term_), "heartbeat monitor");
  common::SpawnDetached(executor_, GcLoop(term_), "garbage collection");
  common::SpawnDetached(executor_, PeriodicLoop(term_), "periodic launches");
}

void Server::RevokeLeadership() {
  if (!leader_)
    return;
  leader_ = false;
  EndTermLoops();
}

void Server::EndTermLoops() {
  if (term_)
    term_->Cancel();
  term_.reset();
  queue_.clear();
  queued_.clear();
  heartbeat_deadline_.clear();
  draining_.clear();
  deployment_healthy_seen_.clear();
  periodic_next_.clear();
}

asio::awaitable<absl::Status> Server::RestoreSnapshotDurably(
    std::vector<model::StateRecord> records) {
  auto guard = co_await durable_writes_.Lock();
  if (!leader_)
    co_return NotLeaderError();
  // What the term's loops hold refers to the state being replaced.
  EndTermLoops();
  absl::Status restored = state_.Restore(records);
  absl::Status durable;
  if (restored.ok())
    durable = co_await state_.Flush();
  if (leader_ && !stop_->cancelled())
    BeginTerm();
  if (!restored.ok())
    co_return restored;
  co_return durable;
}

}  // namespace drover::server
