// The servers' nodes: registration, heartbeats and node failure, eligibility, and the
// evaluations a node's changes call for (server.h).
#include <algorithm>
#include <random>

#include "common/logging.h"
#include "server/server.h"
#include "server/state_layout.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

void Server::UnblockEvals() {
  std::vector<model::Evaluation> unblocked;
  for (const EvalPtr& e : state_.ListEvals("*", "")) {
    if (e->status == model::kEvalBlocked) {
      model::Evaluation c = *e;
      c.status = model::kEvalPending;
      c.status_description = "";
      unblocked.push_back(std::move(c));
    }
  }
  if (unblocked.empty()) {
    return;
  }
  std::vector<std::string> ids;
  for (const auto& e : unblocked)
    ids.push_back(e.id);
  state_.UpsertEvals(std::move(unblocked));
  for (const auto& id : ids)
    Enqueue(id);
}

common::Duration Server::NextHeartbeatTtl() {
  // Nomad's rate-scaled interval: with many nodes, heartbeats spread out so the servers
  // see at most max_heartbeats_per_second of them.
  common::Duration ttl = config_.min_heartbeat_ttl;
  if (config_.max_heartbeats_per_second > 0) {
    // Nodes with a heartbeat timer: those not down.
    const double seconds =
        static_cast<double>(heartbeat_deadline_.size()) / config_.max_heartbeats_per_second;
    ttl = std::max(
        ttl, std::chrono::duration_cast<common::Duration>(std::chrono::duration<double>(seconds)));
  }
  // A random stagger of up to one more TTL, so nodes registered together do not
  // heartbeat together.
  std::uniform_int_distribution<int64_t> stagger(0, std::max<int64_t>(ttl.count() - 1, 0));
  return ttl + common::Duration(stagger(rng_));
}

absl::StatusOr<common::Duration> Server::RegisterNode(model::Node node) {
  if (!leader_)
    return NotLeaderError();
  if (node.id.empty()) {
    return absl::InvalidArgumentError("missing node ID for client registration");
  }
  if (node.datacenter.empty()) {
    return absl::InvalidArgumentError("missing datacenter for client registration");
  }
  if (node.secret_id.empty()) {
    return absl::InvalidArgumentError("missing secret ID for client registration");
  }
  NodePtr prev = state_.GetNode(node.id);
  if (prev && !prev->secret_id.empty() && prev->secret_id != node.secret_id) {
    return absl::PermissionDeniedError("node secret ID does not match the registered node " +
                                       node.id);
  }
  // What the server decides, never what the client says.
  node.status = model::kNodeStatusReady;
  node.computed_class = model::ComputeNodeClass(node);
  node.status_updated_at = common::ToUnixNanos(clock_.Now()) / 1'000'000'000;
  // Set through the API, never by the client.
  node.drain = false;
  node.drain_strategy.reset();
  node.last_drain.reset();
  node.scheduling_eligibility = "eligible";
  // Events come from the servers' records and EmitNodeEvents, not a registration.
  node.events.clear();
  if (prev) {
    node.drain = prev->drain;
    node.drain_strategy = prev->drain_strategy;
    node.last_drain = prev->last_drain;
    node.scheduling_eligibility = prev->scheduling_eligibility;
    node.events = prev->events;
  }
  if (!prev)
    model::AddNodeEvent(node, Event(model::kNodeEventCluster, "Node registered"));
  else if (prev->status == model::kNodeStatusDown)
    model::AddNodeEvent(node, Event(model::kNodeEventCluster, "Node re-registered"));
  const common::Duration ttl = NextHeartbeatTtl();
  heartbeat_deadline_[node.id] = clock_.Now() + ttl + config_.heartbeat_grace;
  const bool changed = !prev || prev->status != node.status || prev->drivers != node.drivers ||
                       prev->node_resources != node.node_resources ||
                       prev->attributes != node.attributes || prev->meta != node.meta ||
                       prev->computed_class != node.computed_class ||
                       prev->http_addr != node.http_addr || prev->secret_id != node.secret_id;
  if (prev && !changed) {
    return ttl;
  }
  state_.UpsertNode(std::move(node));
  UnblockEvals();
  CreateSystemJobEvals();
  return ttl;
}

absl::Status Server::AuthenticateNode(const std::string& node_id,
                                      const std::string& secret_id) const {
  NodePtr node = state_.GetNode(node_id);
  if (!node || node->secret_id.empty()) {
    return absl::NotFoundError("node not found");
  }
  if (node->secret_id != secret_id) {
    return absl::PermissionDeniedError("node secret ID does not match the registered node " +
                                       node_id);
  }
  return absl::OkStatus();
}

absl::StatusOr<common::Duration> Server::Heartbeat(const std::string& node_id) {
  if (!leader_)
    return NotLeaderError();
  NodePtr node = state_.GetNode(node_id);
  if (!node) {
    return absl::NotFoundError("node not found");
  }
  const common::Duration ttl = NextHeartbeatTtl();
  heartbeat_deadline_[node_id] = clock_.Now() + ttl + config_.heartbeat_grace;
  if (node->status != model::kNodeStatusReady) {
    const bool reconnected = node->status == model::kNodeStatusDisconnected;
    model::Node copy = *node;
    copy.status = model::kNodeStatusReady;
    model::AddNodeEvent(copy,
                        Event(model::kNodeEventCluster,
                              reconnected ? "Node reconnected" : "Node reregistered by heartbeat"));
    copy.status_updated_at = common::ToUnixNanos(clock_.Now()) / 1'000'000'000;
    state_.UpsertNode(std::move(copy));
    UnblockEvals();
    CreateSystemJobEvals();
    // Its `unknown` allocations are reconciled once the node reports them.
    if (reconnected)
      DROVER_LOG_INFO("node {} reconnected", node_id);
  }
  return ttl;
}

asio::awaitable<void> Server::HeartbeatMonitor(common::CancellationScopePtr term) {
  // Checked often enough that a node is marked down well within a grace period of its
  // deadline.
  const common::Duration period = std::clamp<common::Duration>(
      config_.heartbeat_grace / 4, std::chrono::milliseconds(100), std::chrono::seconds(1));
  while (!term->cancelled()) {
    co_await (clock_.Sleep(period) || term->Wait());
    if (term->cancelled())
      break;
    const common::Time now = clock_.Now();
    for (auto it = heartbeat_deadline_.begin(); it != heartbeat_deadline_.end();) {
      NodePtr node = state_.GetNode(it->first);
      if (!node) {
        it = heartbeat_deadline_.erase(it);
        continue;
      }
      const bool ready = node->status == model::kNodeStatusReady;
      if ((ready || node->status == model::kNodeStatusDisconnected) && now > it->second) {
        const common::Duration window = ready ? DisconnectWindow(it->first) : common::Duration(0);
        model::Node copy = *node;
        copy.status =
            window > common::Duration(0) ? model::kNodeStatusDisconnected : model::kNodeStatusDown;
        copy.status_updated_at = common::ToUnixNanos(now) / 1'000'000'000;
        model::AddNodeEvent(
            copy, Event(model::kNodeEventCluster, ready ? "Node heartbeat missed"
                                                        : "Node disconnected for longer than its "
                                                          "allocations' max_client_disconnect"));
        DROVER_LOG_WARN("node {} {}; marking it {}", it->first,
                        ready ? "missed its heartbeat" : "stayed disconnected too long",
                        copy.status);
        state_.UpsertNode(std::move(copy));
        CreateNodeEvals(it->first);
        if (window > common::Duration(0)) {
          // Down once the longest window of its allocations passes.
          it->second = common::AddSaturating(now, window);
          ++it;
          continue;
        }
        // No timer for a node that is down: a heartbeat or registration starts one.
        it = heartbeat_deadline_.erase(it);
        continue;
      }
      ++it;
    }
  }
}

std::vector<std::string> Server::CreateSystemJobEvals() {
  // A node that joins, comes back or changes may now run system jobs it did not.
  std::vector<std::string> ids;
  for (const JobPtr& job : state_.ListJobs("*", "")) {
    // Templates (periodic, parameterized) run nothing themselves.
    if (!job->stop && !job->IsPeriodic() && !job->IsParameterized() &&
        (job->type == model::kJobTypeSystem || job->type == model::kJobTypeSysbatch) &&
        !HasQueuedEval(*job))
      ids.push_back(CreateEval(*job, model::kTriggerNodeUpdate).eval_id);
  }
  return ids;
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::SetNodeEligibilityDurably(
    std::string node_id, std::string eligibility) {
  if (eligibility != "eligible" && eligibility != "ineligible")
    co_return absl::InvalidArgumentError("invalid scheduling eligibility \"" + eligibility +
                                         "\": must be \"eligible\" or \"ineligible\"");
  NodePtr before;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    before = state_.GetNode(node_id);
    if (!before)
      return absl::NotFoundError("node not found");
    if (before->drain && eligibility == "eligible")
      return absl::InvalidArgumentError(
          "can not set node's scheduling eligibility to eligible while it is draining");
    EvalResponse resp;
    if (before->scheduling_eligibility != eligibility) {
      model::Node updated = *before;
      updated.scheduling_eligibility = eligibility;
      model::AddNodeEvent(
          updated, Event(model::kNodeEventCluster,
                         eligibility == "eligible" ? "Node marked as eligible for scheduling"
                                                   : "Node marked as ineligible for scheduling"));
      // The operator decides now: a past drain's choice to keep system jobs ends.
      if (updated.last_drain)
        updated.last_drain->ignore_system_jobs = false;
      state_.UpsertNode(std::move(updated));
      if (eligibility == "eligible")
        UnblockEvals();
      resp.eval_ids = CreateSystemJobEvals();
    }
    if (!resp.eval_ids.empty()) {
      resp.eval_id = resp.eval_ids.front();
      resp.eval_create_index = state_.GetEval(resp.eval_id)->create_index;
    }
    resp.index = state_.GetNode(node_id)->modify_index;
    return resp;
  };
  std::function<void()> undo = [&] {
    if (before)
      state_.UpsertNode(*before);
  };
  co_return co_await Durably(write, undo);
}

bool Server::HasQueuedEval(const model::Job& job) const {
  // A pending evaluation not yet taken by the worker (and not a delayed one) will see
  // whatever changed: another would only repeat its pass, as Nomad's broker folds them.
  for (const EvalPtr& e : state_.EvalsByJob(job.namespace_, job.id)) {
    if (e->status == model::kEvalPending && e->wait_until <= clock_.Now() &&
        queued_.contains(e->id))
      return true;
  }
  return false;
}

common::Duration Server::DisconnectWindow(const std::string& node_id) const {
  common::Duration longest{0};
  for (const AllocPtr& a : state_.AllocsByNode(node_id)) {
    if (a->ClientTerminal() || a->ServerTerminal())
      continue;
    if (const model::TaskGroup* g = a->Group(); g != nullptr && g->max_client_disconnect)
      longest = std::max(longest, *g->max_client_disconnect);
  }
  return longest;
}

void Server::CreateNodeEvals(const std::string& node_id) {
  // One evaluation per job with something still running there: its scheduler pass
  // marks those allocations lost and places replacements.
  std::set<std::pair<std::string, std::string>> jobs;
  for (const AllocPtr& a : state_.AllocsByNode(node_id)) {
    if (!a->ClientTerminal())
      jobs.emplace(a->namespace_, a->job_id);
  }
  for (const auto& [ns, id] : jobs) {
    JobPtr job = state_.GetJob(ns, id);
    if (job && !HasQueuedEval(*job))
      CreateEval(*job, model::kTriggerNodeUpdate);
  }
}

}  // namespace drover::server
