// Server: node drains, the API's half (UpdateNodeDrain) and the loop that carries them
// out with PlanDrain's decisions.
#include <algorithm>
#include <set>

#include "common/logging.h"
#include "server/drainer.h"
#include "server/server.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

absl::StatusOr<EvalResponse> Server::UpdateNodeDrain(const std::string& node_id,
                                                     const std::optional<DrainSpec>& spec,
                                                     bool mark_eligible,
                                                     std::map<std::string, std::string> meta) {
  NodePtr before = state_.GetNode(node_id);
  if (!before)
    return absl::NotFoundError("node not found");
  const common::Time now = clock_.Now();
  model::Node node = *before;
  if (spec) {
    model::DrainStrategy s;
    s.deadline = spec->deadline;
    if (spec->deadline > common::Duration::zero())
      s.force_deadline = common::AddSaturating(now, spec->deadline);
    s.ignore_system_jobs = spec->ignore_system_jobs;
    // A changed drain keeps counting from when the node began draining.
    s.started_at = before->drain_strategy ? before->drain_strategy->started_at : now;
    node.drain_strategy = s;
    node.drain = true;
    node.scheduling_eligibility = "ineligible";
    // A changed drain without meta keeps what it had (as Nomad).
    if (meta.empty() && before->drain_strategy && before->last_drain)
      meta = before->last_drain->meta;
    node.last_drain = model::DrainMetadata{.started_at = s.started_at,
                                           .updated_at = now,
                                           .status = model::kDrainStatusDraining,
                                           .meta = std::move(meta)};
    model::AddNodeEvent(
        node, Event(model::kNodeEventDrain, before->drain_strategy ? "Node drain strategy updated"
                                                                   : "Node drain strategy set"));
    draining_.insert(node_id);
  } else {
    if (before->drain_strategy && node.last_drain) {
      node.last_drain->status = model::kDrainStatusCanceled;
      node.last_drain->updated_at = now;
      // Left ineligible, the node keeps the system allocations the drain kept.
      node.last_drain->ignore_system_jobs = before->drain_strategy->ignore_system_jobs;
      if (!meta.empty())
        node.last_drain->meta = std::move(meta);
    }
    if (before->drain_strategy)
      model::AddNodeEvent(node, Event(model::kNodeEventDrain, "Node drain disabled"));
    node.drain_strategy.reset();
    node.drain = false;
    if (mark_eligible)
      node.scheduling_eligibility = "eligible";
    draining_.erase(node_id);
  }
  NodePtr stored = state_.UpsertNode(std::move(node));
  drain_changed_.Notify();
  EvalResponse resp;
  if (stored->scheduling_eligibility == "eligible" && before->scheduling_eligibility != "eligible")
    UnblockEvals();
  if (stored->scheduling_eligibility != before->scheduling_eligibility)
    resp.eval_ids = CreateSystemJobEvals();
  if (!resp.eval_ids.empty()) {
    resp.eval_id = resp.eval_ids.front();
    resp.eval_create_index = state_.GetEval(resp.eval_id)->create_index;
  }
  resp.index = stored->modify_index;
  return resp;
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::UpdateNodeDrainDurably(
    std::string node_id, std::optional<DrainSpec> spec, bool mark_eligible,
    std::map<std::string, std::string> meta) {
  NodePtr before;
  std::function<absl::StatusOr<EvalResponse>()> write = [&] {
    before = state_.GetNode(node_id);
    return UpdateNodeDrain(node_id, spec, mark_eligible, std::move(meta));
  };
  std::function<void()> undo = [&] {
    if (!before)
      return;
    state_.UpsertNode(*before);
    if (before->drain_strategy) {
      draining_.insert(node_id);
    } else {
      draining_.erase(node_id);
    }
    drain_changed_.Notify();
  };
  co_return co_await Durably(write, undo);
}

std::optional<common::Time> Server::DrainPass() {
  std::vector<NodePtr> nodes;
  for (auto it = draining_.begin(); it != draining_.end();) {
    NodePtr n = state_.GetNode(*it);
    if (!n || !n->drain_strategy) {
      it = draining_.erase(it);
      continue;
    }
    nodes.push_back(std::move(n));
    ++it;
  }
  const common::Time now = clock_.Now();
  DrainPlan plan = PlanDrain(state_, nodes, now);
  std::vector<model::Allocation> marked;
  std::set<std::pair<std::string, std::string>> jobs;
  for (const AllocPtr& a : plan.migrate) {
    model::Allocation copy = *a;
    copy.desired_transition.migrate = true;
    marked.push_back(std::move(copy));
    jobs.emplace(a->namespace_, a->job_id);
  }
  if (!marked.empty()) {
    DROVER_LOG_INFO("drain: migrating {} allocation(s)", marked.size());
    state_.UpsertAllocs(std::move(marked));
  }
  for (const auto& [ns, id] : jobs) {
    JobPtr job = state_.GetJob(ns, id);
    if (job && !HasQueuedEval(*job))
      CreateEval(*job, model::kTriggerNodeDrain);
  }
  // Marked before, yet not stopped: the evaluation that should have done it is gone.
  // (A pass never runs while the worker schedules: both hold durable_writes_.)
  std::set<std::pair<std::string, std::string>> stalled;
  for (const AllocPtr& a : plan.marked)
    stalled.emplace(a->namespace_, a->job_id);
  for (const auto& [ns, id] : stalled) {
    JobPtr job = state_.GetJob(ns, id);
    if (!job || jobs.contains({ns, id}))
      continue;
    const std::vector<EvalPtr> evals = state_.EvalsByJob(ns, id);
    const bool pending = std::any_of(evals.begin(), evals.end(), [](const EvalPtr& e) {
      return e->status == model::kEvalPending;
    });
    if (!pending)
      CreateEval(*job, model::kTriggerNodeDrain);
  }
  for (const NodePtr& n : plan.complete) {
    DROVER_LOG_INFO("drain of node {} complete", n->id);
    model::Node done = *n;
    const bool ignore_system = done.drain_strategy->ignore_system_jobs;
    done.drain_strategy.reset();
    done.drain = false;
    if (!done.last_drain)
      done.last_drain.emplace();
    done.last_drain->status = model::kDrainStatusComplete;
    done.last_drain->updated_at = now;
    done.last_drain->ignore_system_jobs = ignore_system;
    model::AddNodeEvent(done, Event(model::kNodeEventDrain, "Node drain complete"));
    state_.UpsertNode(std::move(done));
    draining_.erase(n->id);
  }
  return plan.next_deadline;
}

asio::awaitable<void> Server::DrainLoop(common::CancellationScopePtr term) {
  while (!term->cancelled()) {
    if (draining_.empty()) {
      co_await (drain_changed_.Wait() || term->Wait());
      continue;
    }
    std::optional<common::Time> next;
    {
      // Not while a durable write may yet be undone (as the evaluation worker).
      auto guard = co_await durable_writes_.Lock();
      if (term->cancelled())
        break;
      next = DrainPass();
    }
    if (draining_.empty())
      continue;
    const uint64_t index =
        std::max(state_.TableIndex(Table::kAllocs), state_.TableIndex(Table::kNodes));
    // A pass costs a walk of the draining nodes' allocations; state changes wake it,
    // and the next deadline (looked at again hourly, whatever its distance).
    const common::Duration wait =
        next ? std::clamp<common::Duration>(*next - clock_.Now(), common::Duration::zero(),
                                            std::chrono::hours(1))
             : std::chrono::hours(1);
    std::vector<Table> tables{Table::kAllocs, Table::kNodes};
    auto changed = state_.BlockUntil(tables, index, wait);
    auto notified = drain_changed_.Wait();
    auto stopped = term->Wait();
    co_await (std::move(changed) || std::move(notified) || std::move(stopped));
  }
}

}  // namespace drover::server
