#include "server/scheduler.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "common/ids.h"
#include "server/placement.h"
#include "server/reschedule.h"
#include "server/rollout.h"

namespace drover::server {
namespace {

// A failed allocation being replaced by rescheduling, and the delay that took.
struct Rescheduled {
  AllocPtr failed;
  common::Duration delay{0};
};

// What pass 1 leaves for pass 2 to place, per task group.
struct GroupWork {
  const model::TaskGroup* group;
  std::vector<int> to_place;
  std::map<int, std::string> replaces;       // index -> alloc replaced by a destructive update
  std::map<int, std::string> replaced_node;  // index -> node of that alloc
  std::map<int, Rescheduled> rescheduled;    // index -> failed alloc replaced by policy
  std::vector<int> canaries;                 // canaries to place (indexes beside others)
  std::string deployment_id;                 // what new allocations join
};

// For a failed allocation of the job's current version: true when the reschedule
// policy frees its slot for a replacement now (recorded in `w`). Otherwise it keeps
// the slot, and when a later replacement is allowed, a follow-up evaluation waits for
// that time (one at a time: the allocation names it).
bool Reschedule(const SchedulerInput& in, const model::TaskGroup& g, const AllocPtr& a, int idx,
                GroupWork& w, PlanResult& plan) {
  if (!g.reschedule_policy)
    return false;
  if (a->desired_transition.force_reschedule.value_or(false)) {
    // POST /v1/job/:id/evaluate with ForceReschedule: now, whatever the policy says.
    w.rescheduled[idx] = Rescheduled{.failed = a, .delay = common::Duration{0}};
    return true;
  }
  std::optional<RescheduleDecision> decision = DecideReschedule(*a, *g.reschedule_policy);
  if (!decision)
    return false;
  // Its own follow-up runs it now, as in Nomad (the time it waited for was computed
  // then; the allocation's modify time, a fallback fail time, moved since).
  if (decision->at <= in.now || a->followup_eval_id == in.eval.id) {
    w.rescheduled[idx] = Rescheduled{.failed = a, .delay = decision->delay};
    return true;
  }
  if (!a->followup_eval_id.empty() && a->followup_eval_id != in.eval.id)
    return false;
  model::Evaluation e = FollowupEval(in, model::kTriggerRetryFailedAlloc,
                                     "created for delayed rescheduling", decision->at);
  model::Allocation marked = *a;
  marked.followup_eval_id = e.id;
  plan.upserts.push_back(std::move(marked));
  plan.followup_evals.push_back(std::move(e));
  return false;
}

// The nodes a replacement of a failed allocation should avoid: where it and its
// predecessors failed.
std::set<std::string> NodesToAvoid(const Rescheduled& r) {
  std::set<std::string> out{r.failed->node_id};
  if (r.failed->reschedule_tracker) {
    for (const auto& e : r.failed->reschedule_tracker->events)
      out.insert(e.prev_node_id);
  }
  return out;
}

// How many nodes that fit a placement are scored before the best is taken (Nomad's
// LimitIterator): 2 for batch jobs, and for others log2 of the candidates, at least 2.
// What a placement costs then grows with the log of the cluster, not its size.
size_t CandidateLimit(const model::Job& job, size_t nodes) {
  if (job.IsBatch() || nodes <= 2)
    return 2;
  return std::max<size_t>(2, static_cast<size_t>(std::ceil(std::log2(static_cast<double>(nodes)))));
}

// Device affinities rank nodes by what they hold: a few sampled nodes could miss the
// one they prefer, so such jobs score every node.
bool HasDeviceAffinities(const model::Job& job) {
  for (const model::TaskGroup& g : job.task_groups) {
    for (const model::Task& t : g.tasks) {
      for (const model::RequestedDevice& d : t.resources.devices) {
        if (!d.affinities.empty())
          return true;
      }
    }
  }
  return false;
}

// Pass 1 for one group: reconciles its live allocations (oldest first) against its
// count and spec. Stops, marks lost, updates in place or replaces them in `plan`, and
// returns what is left to place.
// Where the nodes of a job's allocations stand, for GroupReconciler.
struct NodeStates {
  std::set<std::string> lost;                        // down or gone
  std::map<std::string, common::Time> disconnected;  // since when
};

// For an allocation still running, as far as the servers know, on a node that is down,
// gone or disconnected: marks it unknown (within its group's max_client_disconnect) or
// lost. True when it did, and the allocation's slot wants a replacement. What finished
// on the node stays finished.
bool AwayFromItsNode(const SchedulerInput& in, const model::TaskGroup& g, const AllocPtr& a,
                     const NodeStates& nodes, PlanResult& plan) {
  if (a->ClientTerminal())
    return false;
  auto disconnected = nodes.disconnected.find(a->node_id);
  if (disconnected != nodes.disconnected.end() && KeepUnknown(in, g, a, disconnected->second, plan))
    return true;
  if (!nodes.lost.contains(a->node_id) && disconnected == nodes.disconnected.end())
    return false;
  plan.upserts.push_back(LostCopy(*a));
  ++plan.lost;
  return true;
}

// The allocations whose replacement is still meant to run: not replaced again.
std::set<std::string> StillReplaced(const std::vector<AllocPtr>& live) {
  std::set<std::string> replaced;
  for (const AllocPtr& a : live) {
    if (!a->previous_allocation.empty() && !a->ServerTerminal() && !a->ClientTerminal())
      replaced.insert(a->previous_allocation);
  }
  return replaced;
}

// Canaries (rollout.h): those that will never be promoted are stopped; those waiting
// for promotion are taken out of `live` (they hold no slot) and returned.
std::vector<AllocPtr> SetCanariesAside(const Rollout& rollout, std::vector<AllocPtr>& live,
                                       model::DesiredUpdates& updates, PlanResult& plan) {
  std::vector<AllocPtr> pending;
  std::erase_if(live, [&](const AllocPtr& a) {
    if (rollout.StaleCanary(*a)) {
      if (!a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(*a, kAllocNotNeeded));
        ++plan.stopped;
        ++updates.stop;
      }
      return true;
    }
    if (rollout.PendingCanary(*a)) {
      pending.push_back(a);
      ++updates.ignore;
      return true;
    }
    return false;
  });
  // The current deployment's promoted canaries keep their slots ahead of the
  // allocations they were placed beside, which are then stopped.
  std::sort(live.begin(), live.end(), [&](const AllocPtr& a, const AllocPtr& b) {
    const bool ca = rollout.CurrentCanary(*a);
    const bool cb = rollout.CurrentCanary(*b);
    if (ca != cb)
      return ca;
    return a->create_index < b->create_index;
  });
  return pending;
}

// Slots for `wanted` canaries: those of allocations a destructive update replaces
// (lowest first), then beyond the count; none that a canary holds already.
std::vector<int> CanarySlots(const std::vector<std::pair<AllocPtr, int>>& destructive,
                             const std::vector<AllocPtr>& existing, int count, int wanted) {
  std::set<int> held;
  for (const AllocPtr& c : existing)
    held.insert(c->Index());
  std::vector<int> candidates;
  for (const auto& [a, idx] : destructive)
    candidates.push_back(idx);
  std::sort(candidates.begin(), candidates.end());
  std::vector<int> out;
  for (int idx : candidates) {
    if (static_cast<int>(out.size()) < wanted && !held.contains(idx))
      out.push_back(idx);
  }
  for (int i = count; static_cast<int>(out.size()) < wanted; ++i) {
    if (!held.contains(i))
      out.push_back(i);
  }
  return out;
}

// Stores the in-place updates; those that move into `deployment_id` are judged again
// there.
void ApplyInPlace(std::vector<model::Allocation> in_place, const std::string& deployment_id,
                  PlanResult& plan) {
  for (model::Allocation& u : in_place) {
    u.desired_transition.reschedule.reset();  // a verdict of the version it leaves
    if (!deployment_id.empty() && u.deployment_id != deployment_id) {
      u.deployment_id = deployment_id;
      u.deployment_status.reset();
    }
    plan.upserts.push_back(std::move(u));
  }
}

bool HasCurrentVersion(const SchedulerInput& in, const model::TaskGroup& g) {
  return std::any_of(in.job_allocs.begin(), in.job_allocs.end(), [&](const AllocPtr& a) {
    return a->task_group == g.name && a->job && a->job->version == in.job->version &&
           a->job->create_index == in.job->create_index;
  });
}

// Pass 1 for one group, in named steps: sorts each live allocation (kept, freed for a
// replacement, rescheduled, updated in place or destructively), lets the rollout limit
// the destructive updates and canaries, and picks the slots pass 2 places.
class GroupReconciler {
 public:
  GroupReconciler(const SchedulerInput& in, const model::TaskGroup& g, std::vector<AllocPtr> live,
                  const NodeStates& nodes, Rollout& rollout, PlanResult& plan)
      : in_(in),
        g_(g),
        live_(std::move(live)),
        nodes_(nodes),
        rollout_(rollout),
        plan_(plan),
        updates_(plan.desired_tg_updates[g.name]),
        replaced_(StillReplaced(live_)),
        w_{&g, {}, {}, {}, {}, {}, {}} {}

  GroupWork Run() {
    const std::vector<AllocPtr> canaries = SetCanariesAside(rollout_, live_, updates_, plan_);
    for (const AllocPtr& a : live_)
      Sort(a);
    // Destructive updates: canaries first, then as many as the rollout allows now; the
    // rest keep running (and their slots) until a later pass.
    const int canaries_wanted = rollout_.CanariesWanted(g_, static_cast<int>(destructive_.size()),
                                                        static_cast<int>(canaries.size()));
    const int done =
        StopDestructive(canaries_wanted > 0 ? 0 : rollout_.DestructiveLimit(g_, live_));
    w_.canaries = CanarySlots(destructive_, canaries, g_.count, canaries_wanted);
    updates_.canary += w_.canaries.size();
    // Paused, failed or waiting for promotion: only what replaces something is placed.
    PickSlots(rollout_.PlacementsBlocked(g_) || canaries_wanted > 0);
    const GroupOutcome outcome{
        .had_running = HasCurrentVersion(in_, g_),
        .updating_spec = !destructive_.empty() || !in_place_.empty(),
        .pending = static_cast<int>(destructive_.size()) - done +
                   static_cast<int>(w_.to_place.size() + w_.canaries.size() + in_place_.size()),
        .canaries_wanted = canaries_wanted};
    w_.deployment_id = rollout_.AttachGroup(g_, outcome);
    ApplyInPlace(std::move(in_place_), w_.deployment_id, plan_);
    // Refills of a migration or a destructive update are counted as those, not as places.
    updates_.place += std::count_if(w_.to_place.begin(), w_.to_place.end(),
                                    [&](int i) { return !not_placements_.contains(i); });
    return std::move(w_);
  }

 private:
  void Replace(const AllocPtr& a, int idx) {
    w_.replaces[idx] = a->id;
    w_.replaced_node[idx] = a->node_id;
  }

  void Stop(const AllocPtr& a, const char* why) {
    plan_.upserts.push_back(StopCopy(*a, why));
    ++plan_.stopped;
  }

  // One live allocation: what becomes of it and of its slot.
  void Sort(const AllocPtr& a) {
    const int idx = a->Index();
    if (Moved(a, idx))
      return;
    const model::Job& job = *in_.job;
    const bool current_version =
        a->job && a->job->version == job.version && a->job->create_index == job.create_index;
    // Failed, or still running but found unhealthy in a deployment with a progress
    // deadline: replaced as its reschedule policy allows. A running one stops now, so
    // that its resources are free for its replacement; if that finds no node anyway, the
    // placement waits for capacity like any other (the allocation was unhealthy).
    if (current_version && rollout_.MayReschedule(*a) && Reschedule(in_, g_, a, idx, w_, plan_)) {
      if (!a->ClientTerminal())
        Stop(a, kAllocRescheduled);
      return;
    }
    if (a->ClientTerminal() && !current_version) {
      // Finished under an older version (or a purged and re-registered job): the new
      // version runs again in this slot.
      return;
    }
    taken_.insert(idx);
    taker_[idx] = a->id;
    if (current_version || a->ClientTerminal()) {
      // Finished allocations keep their slot: batch work is not redone, and failed ones
      // are replaced only as their reschedule policy allows (above).
      ++updates_.ignore;
      return;
    }
    if (CanUpdateInPlace(in_, g_, *a)) {
      model::Allocation updated = *a;
      updated.job = in_.job;
      in_place_.push_back(std::move(updated));
      ++plan_.updated_in_place;
      ++updates_.in_place_update;
    } else {
      destructive_.emplace_back(a, idx);
    }
  }

  // True when `a` no longer holds its slot whatever its version: a duplicate or one
  // beyond the count (stopped), away from its node, migrating, or already replaced.
  bool Moved(const AllocPtr& a, int idx) {
    if (idx < 0 || idx >= g_.count || taken_.contains(idx)) {
      if (!a->ClientTerminal()) {
        const bool reconnected = taken_.contains(idx) && taker_[idx] == a->previous_allocation;
        Stop(a, reconnected ? kAllocReconnected : kAllocNotNeeded);
        ++updates_.stop;
      }
      return true;
    }
    const int lost_before = plan_.lost;
    if (AwayFromItsNode(in_, g_, a, nodes_, plan_)) {
      if (plan_.lost > lost_before)
        ++updates_.stop;
      else
        ++updates_.ignore;  // unknown: it may still come back
      if (!replaced_.contains(a->id))
        Replace(a, idx);
      return true;
    }
    if (a->client_status == model::kClientUnknown && replaced_.contains(a->id)) {
      // Its node is back but has not said how it is yet: the replacement keeps the slot
      // until it does (then one of the two is stopped).
      return true;
    }
    if (a->desired_transition.migrate.value_or(false) && !a->ClientTerminal()) {
      Stop(a, kAllocMigrating);
      ++updates_.migrate;
      not_placements_.insert(idx);
      Replace(a, idx);
      return true;
    }
    // Rescheduled, or replaced while its node was away and finished there: its
    // replacement holds the slot.
    return a->ClientTerminal() && (!a->next_allocation.empty() || replaced_.contains(a->id));
  }

  // Stops up to `limit` allocations to update destructively, freeing their slots;
  // returns how many.
  int StopDestructive(int limit) {
    int done = 0;
    for (const auto& [a, idx] : destructive_) {
      if (done >= limit) {
        ++updates_.ignore;
        continue;
      }
      Stop(a, kAllocUpdating);
      ++updates_.destructive_update;
      not_placements_.insert(idx);
      taken_.erase(idx);
      taker_.erase(idx);
      Replace(a, idx);
      ++done;
    }
    return done;
  }

  void PickSlots(bool blocked) {
    for (int i = 0; i < g_.count; ++i) {
      if (taken_.contains(i))
        continue;
      if (blocked && !w_.replaces.contains(i) && !w_.rescheduled.contains(i))
        continue;
      w_.to_place.push_back(i);
    }
  }

  const SchedulerInput& in_;
  const model::TaskGroup& g_;
  std::vector<AllocPtr> live_;
  const NodeStates& nodes_;
  Rollout& rollout_;
  PlanResult& plan_;
  model::DesiredUpdates& updates_;
  const std::set<std::string> replaced_;  // still replaced while their node was away
  GroupWork w_;
  std::set<int> not_placements_;  // slots refilled by a migration or a destructive update
  std::set<int> taken_;
  std::map<int, std::string> taker_;  // index -> the allocation that holds it
  std::vector<std::pair<AllocPtr, int>> destructive_;
  std::vector<model::Allocation> in_place_;
};

// Pass 2: places what pass 1 left, one allocation at a time. The nodes that may run
// the job are in random order; each placement walks on from where the previous one
// stopped (Nomad's StaticIterator) and takes the best of `limit_` that fit.
class Placer {
 public:
  Placer(const SchedulerInput& in, std::map<std::string, NodeUsage> usage, std::mt19937_64& rng)
      : in_(in), job_(*in.job), usage_(std::move(usage)), rng_(rng) {
    for (const NodePtr& np : in.nodes) {
      if (NodeServesJob(job_, *np)) {
        ring_.push_back(np.get());
        serving_[np->id] = np.get();
      }
    }
    std::shuffle(ring_.begin(), ring_.end(), rng_);
    limit_ = in.score_every_node || HasDeviceAffinities(job_) ? ring_.size()
                                                              : CandidateLimit(job_, ring_.size());
  }

  void PlaceGroup(const GroupWork& w, PlanResult& plan) {
    const model::TaskGroup& g = *w.group;
    plan.queued[g.name] = 0;
    if (w.to_place.empty() && w.canaries.empty())
      return;
    // Slots, then canaries (true) beside them.
    std::vector<std::pair<int, bool>> placements;
    for (int idx : w.to_place)
      placements.emplace_back(idx, false);
    for (int idx : w.canaries)
      placements.emplace_back(idx, true);
    const GroupAsk ask = AskOf(g);
    // A sticky or migrating ephemeral disk wants the replacement on the node that has
    // the data (reference §7); any other feasible node is the fallback.
    const bool sticky = g.ephemeral_disk && (g.ephemeral_disk->sticky || g.ephemeral_disk->migrate);
    int failed = 0;
    model::AllocMetric failed_metric;
    for (const auto& [idx, canary] : placements) {
      if (failed > 0) {
        // Nothing fit one placement; usage only grew since, so nothing fits the rest of
        // the group either (Nomad coalesces these failures too). Counting them costs
        // nothing, however large the count.
        ++failed;
        continue;
      }
      const auto resched = canary ? w.rescheduled.end() : w.rescheduled.find(idx);
      const std::set<std::string> avoid =
          resched == w.rescheduled.end() ? std::set<std::string>{} : NodesToAvoid(resched->second);
      const model::Node* home = nullptr;
      if (auto prev = w.replaced_node.find(idx);
          sticky && !canary && prev != w.replaced_node.end()) {
        auto it = serving_.find(prev->second);
        home = it == serving_.end() ? nullptr : it->second;
      }
      model::AllocMetric metric;
      std::optional<std::pair<const model::Node*, Fit>> pick = Pick(g, ask, home, avoid, metric);
      if (!pick) {
        if (failed == 0)
          failed_metric = metric;
        ++failed;
        continue;
      }
      const model::Node& node = *pick->first;
      model::Allocation a = NewAlloc(in_, g, idx, node, std::move(pick->second), ask, metric);
      a.deployment_id = w.deployment_id;
      if (canary)
        a.deployment_status = model::AllocDeploymentStatus{.canary = true};
      if (auto it = w.replaces.find(idx); !canary && it != w.replaces.end())
        a.previous_allocation = it->second;
      if (resched != w.rescheduled.end()) {
        const Rescheduled& r = resched->second;
        a.previous_allocation = r.failed->id;
        a.reschedule_tracker = NextTracker(*r.failed, *g.reschedule_policy, in_.now, r.delay);
        // One still running was stopped in the first pass.
        model::Allocation failed_alloc =
            r.failed->ClientTerminal() ? *r.failed : StopCopy(*r.failed, kAllocRescheduled);
        failed_alloc.next_allocation = a.id;
        plan.upserts.push_back(std::move(failed_alloc));
      }
      AddUsage(usage_[node.id], a);
      last_ = &node;
      plan.upserts.push_back(std::move(a));
      ++plan.placed;
    }
    RecordFailedPlacements(plan, g.name, failed, std::move(failed_metric));
  }

 private:
  // The best node for one allocation of `g`, with its fit; nothing when none fits.
  // `home` (a sticky disk's node) is scored first and above any other; the node the
  // previous placement chose is a candidate again, so bin packing fills it before it
  // opens another. Nodes in `avoid` are scored low and do not count towards the limit:
  // a replacement looks on for nodes it prefers.
  std::optional<std::pair<const model::Node*, Fit>> Pick(const model::TaskGroup& g,
                                                         const GroupAsk& ask,
                                                         const model::Node* home,
                                                         const std::set<std::string>& avoid,
                                                         model::AllocMetric& metric) {
    metric.nodes_available = static_cast<int>(ring_.size());
    const model::Node* best = nullptr;
    std::optional<Fit> best_fit;
    auto consider = [&](const model::Node& node, double bonus) {
      ++metric.nodes_evaluated;
      std::optional<Fit> fit = FitOnNode(job_, g, node, usage_[node.id], ask, rng_, metric);
      if (!fit)
        return false;
      fit->score += bonus;
      if (avoid.contains(node.id))
        fit->score -= 50;  // below any other feasible node, yet still a choice
      if (best == nullptr || fit->score > best_fit->score) {
        best = &node;
        best_fit = std::move(fit);
      }
      return !avoid.contains(node.id);
    };
    if (home != nullptr)
      consider(*home, 100);  // above any bin-packing score
    size_t fits = 0;
    if (last_ != nullptr && last_ != home && consider(*last_, 0))
      ++fits;
    for (size_t seen = 0; seen < ring_.size() && fits < limit_; ++seen) {
      const model::Node& node = *ring_[cursor_];
      cursor_ = (cursor_ + 1) % ring_.size();
      if (&node != home && &node != last_ && consider(node, 0))
        ++fits;
    }
    if (best == nullptr)
      return std::nullopt;
    return std::make_pair(best, *std::move(best_fit));
  }

  const SchedulerInput& in_;
  const model::Job& job_;
  std::map<std::string, NodeUsage> usage_;
  std::mt19937_64& rng_;
  std::vector<const model::Node*> ring_;
  std::map<std::string, const model::Node*> serving_;
  size_t limit_ = 0;
  size_t cursor_ = 0;
  const model::Node* last_ = nullptr;
};

}  // namespace

PlanResult Schedule(const SchedulerInput& in) {
  PlanResult plan;
  std::mt19937_64 rng(in.seed);
  const bool stop_all = !in.job || in.job->stop;
  Rollout rollout(in, plan);  // cancels what no longer applies

  // Live allocations of the job (desired run), grouped by task group.
  std::map<std::string, std::vector<AllocPtr>> live_by_group;
  for (const AllocPtr& a : in.job_allocs) {
    if (a->desired_status != model::kDesiredRun)
      continue;
    if (stop_all || in.job->FindGroup(a->task_group) == nullptr) {
      if (!a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(*a, kAllocNotNeeded));
        ++plan.stopped;
        ++plan.desired_tg_updates[a->task_group].stop;
      }
      continue;
    }
    live_by_group[a->task_group].push_back(a);
  }
  if (stop_all) {
    return plan;
  }
  if (in.job->type == model::kJobTypeSystem || in.job->type == model::kJobTypeSysbatch)
    return ScheduleSystem(in);

  const NodeStates nodes{.lost = LostNodes(in), .disconnected = DisconnectedNodes(in)};
  std::vector<GroupWork> work;
  for (const model::TaskGroup& g : in.job->task_groups)
    work.push_back(
        GroupReconciler(in, g, std::move(live_by_group[g.name]), nodes, rollout, plan).Run());
  rollout.Finish();
  // Resource usage per node from everything that keeps running there.
  Placer placer(in, UsageAfter(in.node_allocs, plan), rng);
  for (const GroupWork& w : work)
    placer.PlaceGroup(w, plan);
  return plan;
}

}  // namespace drover::server
