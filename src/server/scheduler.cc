#include "server/scheduler.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "common/ids.h"
#include "server/placement.h"
#include "server/reschedule.h"

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
};

// For a failed allocation of the job's current version: true when the reschedule
// policy frees its slot for a replacement now (recorded in `w`). Otherwise it keeps
// the slot, and when a later replacement is allowed, a follow-up evaluation waits for
// that time (one at a time: the allocation names it).
bool Reschedule(const SchedulerInput& in, const model::TaskGroup& g, const AllocPtr& a, int idx,
                GroupWork& w, PlanResult& plan) {
  if (!g.reschedule_policy)
    return false;
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
  model::Evaluation e;
  e.id = common::NewUuid();
  e.namespace_ = in.job->namespace_;
  e.priority = in.job->priority;
  e.type = in.job->type;
  e.triggered_by = model::kTriggerRetryFailedAlloc;
  e.job_id = in.job->id;
  e.job_modify_index = in.job->job_modify_index;
  e.status = model::kEvalPending;
  e.status_description = "created for delayed rescheduling";
  e.previous_eval = in.eval.id;
  e.wait_until = decision->at;
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

}  // namespace

PlanResult Schedule(const SchedulerInput& in) {
  PlanResult plan;
  std::mt19937_64 rng(in.seed);
  const bool stop_all = !in.job || in.job->stop;

  // Live allocations of the job (desired run), grouped by task group.
  std::map<std::string, std::vector<AllocPtr>> live_by_group;
  for (const AllocPtr& a : in.job_allocs) {
    if (a->desired_status != model::kDesiredRun)
      continue;
    if (stop_all || in.job->FindGroup(a->task_group) == nullptr) {
      if (!a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(*a, kAllocNotNeeded));
        ++plan.stopped;
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
  const model::Job& job = *in.job;
  auto job_ptr = in.job;
  const std::set<std::string> lost_nodes = LostNodes(in);

  // Pass 1: reconcile each group's live allocations against its count and spec.
  std::vector<GroupWork> work;
  for (const model::TaskGroup& g : job.task_groups) {
    GroupWork w{&g, {}, {}, {}, {}};
    std::vector<AllocPtr>& live = live_by_group[g.name];
    std::set<int> taken;
    std::sort(live.begin(), live.end(), [](const AllocPtr& a, const AllocPtr& b) {
      return a->create_index < b->create_index;
    });
    for (const AllocPtr& a : live) {
      const int idx = a->Index();
      if (idx < 0 || idx >= g.count || taken.contains(idx)) {
        if (!a->ClientTerminal()) {
          plan.upserts.push_back(StopCopy(*a, kAllocNotNeeded));
          ++plan.stopped;
        }
        continue;
      }
      if (lost_nodes.contains(a->node_id) && !a->ClientTerminal()) {
        // What finished on the node stays finished; what ran there is replaced.
        plan.upserts.push_back(LostCopy(*a));
        ++plan.lost;
        w.replaces[idx] = a->id;
        w.replaced_node[idx] = a->node_id;
        continue;
      }
      if (a->desired_transition.migrate.value_or(false) && !a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(*a, kAllocMigrating));
        ++plan.stopped;
        w.replaces[idx] = a->id;
        w.replaced_node[idx] = a->node_id;
        continue;
      }
      if (a->ClientTerminal() && !a->next_allocation.empty()) {
        // Rescheduled: its replacement holds the slot.
        continue;
      }
      const bool current_version =
          a->job && a->job->version == job.version && a->job->create_index == job.create_index;
      if (a->client_status == model::kClientFailed && current_version &&
          Reschedule(in, g, a, idx, w, plan)) {
        continue;
      }
      if (a->ClientTerminal() && !current_version) {
        // Finished under an older version (or a purged and re-registered job): the new
        // version runs again in this slot.
        continue;
      }
      taken.insert(idx);
      if (current_version) {
        continue;
      }
      if (a->ClientTerminal()) {
        // Finished allocations keep their slot: batch work is not redone, and failed ones
        // are replaced only as their reschedule policy allows (above).
        continue;
      }
      const model::TaskGroup* old_group = a->job ? a->job->FindGroup(g.name) : nullptr;
      if (old_group != nullptr && SameSpecIgnoringCount(*old_group, g)) {
        model::Allocation updated = *a;
        updated.job = job_ptr;
        plan.upserts.push_back(std::move(updated));
        ++plan.updated_in_place;
      } else {
        plan.upserts.push_back(StopCopy(*a, kAllocUpdating));
        ++plan.stopped;
        taken.erase(idx);
        w.replaces[idx] = a->id;
        w.replaced_node[idx] = a->node_id;
      }
    }
    for (int i = 0; i < g.count; ++i) {
      if (!taken.contains(i))
        w.to_place.push_back(i);
    }
    work.push_back(std::move(w));
  }

  // Resource usage per node from everything that keeps running there.
  std::map<std::string, NodeUsage> usage = UsageAfter(in.node_allocs, plan);

  // The nodes that may run the job, in random order: each placement walks on from
  // where the previous one stopped (Nomad's StaticIterator).
  std::vector<const model::Node*> ring;
  std::map<std::string, const model::Node*> serving;
  for (const NodePtr& np : in.nodes) {
    if (NodeServesJob(job, *np)) {
      ring.push_back(np.get());
      serving[np->id] = np.get();
    }
  }
  std::shuffle(ring.begin(), ring.end(), rng);
  size_t cursor = 0;
  const model::Node* last = nullptr;
  const size_t limit = in.score_every_node || HasDeviceAffinities(job)
                           ? ring.size()
                           : CandidateLimit(job, ring.size());

  // Pass 2: place what is missing.
  for (const GroupWork& w : work) {
    const model::TaskGroup& g = *w.group;
    const auto& to_place = w.to_place;
    const auto& replaces = w.replaces;
    plan.queued[g.name] = 0;
    if (to_place.empty())
      continue;

    const GroupAsk ask = AskOf(g);
    // A sticky or migrating ephemeral disk wants the replacement on the node that has
    // the data (reference §7); any other feasible node is the fallback.
    const bool sticky = g.ephemeral_disk && (g.ephemeral_disk->sticky || g.ephemeral_disk->migrate);
    int failed = 0;
    model::AllocMetric failed_metric;
    for (int idx : to_place) {
      if (failed > 0) {
        // Nothing fit one placement; usage only grew since, so nothing fits the rest of
        // the group either (Nomad coalesces these failures too). Counting them costs
        // nothing, however large the count.
        ++failed;
        continue;
      }
      model::AllocMetric metric;
      metric.nodes_available = static_cast<int>(ring.size());
      const auto resched = w.rescheduled.find(idx);
      const std::set<std::string> avoid =
          resched == w.rescheduled.end() ? std::set<std::string>{} : NodesToAvoid(resched->second);
      const model::Node* best = nullptr;
      std::optional<Fit> best_fit;
      auto consider = [&](const model::Node& node, double bonus) {
        ++metric.nodes_evaluated;
        std::optional<Fit> fit = FitOnNode(job, g, node, usage[node.id], ask, rng, metric);
        if (!fit)
          return false;
        fit->score += bonus;
        if (avoid.contains(node.id))
          fit->score -= 50;  // below any other feasible node, yet still a choice
        if (best == nullptr || fit->score > best_fit->score) {
          best = &node;
          best_fit = std::move(fit);
        }
        return true;
      };
      const model::Node* home = nullptr;
      if (auto prev = w.replaced_node.find(idx); sticky && prev != w.replaced_node.end()) {
        auto it = serving.find(prev->second);
        home = it == serving.end() ? nullptr : it->second;
      }
      if (home != nullptr)
        consider(*home, 100);  // above any bin-packing score
      // The node the previous placement chose is a candidate again: bin packing then
      // fills it before it opens another. Nodes to avoid do not count towards the
      // limit: a replacement looks on for nodes it prefers.
      size_t fits = 0;
      if (last != nullptr && last != home && consider(*last, 0) && !avoid.contains(last->id))
        ++fits;
      for (size_t seen = 0; seen < ring.size() && fits < limit; ++seen) {
        const model::Node& node = *ring[cursor];
        cursor = (cursor + 1) % ring.size();
        if (&node != home && &node != last && consider(node, 0) && !avoid.contains(node.id))
          ++fits;
      }
      if (best == nullptr) {
        if (failed == 0)
          failed_metric = metric;
        ++failed;
        continue;
      }
      model::Allocation a = NewAlloc(in, g, idx, *best, *std::move(best_fit), ask, metric);
      if (auto it = replaces.find(idx); it != replaces.end())
        a.previous_allocation = it->second;
      if (resched != w.rescheduled.end()) {
        const Rescheduled& r = resched->second;
        a.previous_allocation = r.failed->id;
        a.reschedule_tracker = NextTracker(*r.failed, *g.reschedule_policy, in.now, r.delay);
        model::Allocation failed = *r.failed;
        failed.next_allocation = a.id;
        plan.upserts.push_back(std::move(failed));
      }
      AddUsage(usage[best->id], a);
      last = best;
      plan.upserts.push_back(std::move(a));
      ++plan.placed;
    }
    RecordFailedPlacements(plan, g.name, failed, std::move(failed_metric));
  }
  return plan;
}

}  // namespace drover::server
