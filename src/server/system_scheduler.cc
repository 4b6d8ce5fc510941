// The system scheduler, for system and sysbatch jobs: one allocation of each group on
// every node that serves the job (ready, eligible, in its datacenters and pool) and
// meets its constraints, nodes that join later included. An allocation on a node that
// went down is lost; on a node that no longer serves the job, stopped, unless a drain
// keeps it there (NodeKeepsSystemAllocs); one marked for migration, stopped. A sysbatch
// allocation that completed stays complete; system allocations are never
// rescheduled (their restart policy is all they get).
#include <algorithm>

#include "server/placement.h"
#include "server/scheduler.h"

namespace drover::server {
namespace {

constexpr char kNodeNotServing[] = "alloc not needed as its node no longer runs the job";

bool CurrentVersion(const model::Allocation& a, const model::Job& job) {
  return a.job && a.job->version == job.version && a.job->create_index == job.create_index;
}

// What pass 1 leaves for pass 2: per group, the serving nodes that lack an allocation,
// and the allocation each new one replaces (a destructive update).
struct SystemWork {
  std::map<std::string, std::set<std::string>> to_place;  // group -> nodes
  std::map<std::pair<std::string, std::string>, AllocPtr> replaces;
  // When the next batch of a rolling update is due (none: nothing held back).
  std::optional<common::Time> next_batch;
};

// How many of a group's `pending` destructive updates this pass makes, and when the
// next batch is due if some wait. A group with a rolling update block (Nomad's system
// `update`: max_parallel and stagger) replaces at most max_parallel allocations per
// stagger. The stagger counts from the newest replacement of this version, so any
// evaluation (a node update, a second registration) respects it, not only the
// follow-up this creates.
struct RollingGate {
  size_t allowed = 0;
  std::optional<common::Time> next;
};

RollingGate GateRollingUpdates(const SchedulerInput& in, const model::TaskGroup& g,
                               size_t pending) {
  if (!g.update || !g.update->Rolling() || pending == 0)
    return {pending, std::nullopt};
  const common::Duration stagger = std::max(g.update->stagger, common::Duration::zero());
  std::optional<int64_t> newest;
  for (const AllocPtr& a : in.job_allocs) {
    if (a->task_group == g.name && !a->previous_allocation.empty() && CurrentVersion(*a, *in.job))
      newest = std::max(newest.value_or(a->create_time), a->create_time);
  }
  if (newest) {
    const common::Time due = common::AddSaturating(common::FromUnixNanos(*newest), stagger);
    if (in.now < due)
      return {0, due};
  }
  const size_t allowed = std::min(pending, static_cast<size_t>(g.update->max_parallel));
  if (allowed == pending)
    return {allowed, std::nullopt};
  return {allowed, common::AddSaturating(in.now, stagger)};
}

// The job's live allocations by (group, node). Those of removed groups, or on nodes
// that no longer serve the job, are stopped (lost, on a node that is down).
std::map<std::pair<std::string, std::string>, std::vector<AllocPtr>> LiveSlots(
    const SchedulerInput& in, const std::set<std::string>& serving, PlanResult& plan) {
  const model::Job& job = *in.job;
  const std::set<std::string> lost_nodes = LostNodes(in);
  const std::map<std::string, common::Time> disconnected = DisconnectedNodes(in);
  std::set<std::string> keeping;
  for (const NodePtr& n : in.nodes) {
    if (!serving.contains(n->id) && NodeKeepsSystemAllocs(job, *n))
      keeping.insert(n->id);
  }
  std::map<std::pair<std::string, std::string>, std::vector<AllocPtr>> slots;
  for (const AllocPtr& a : in.job_allocs) {
    if (a->desired_status != model::kDesiredRun)
      continue;
    if (a->desired_transition.migrate.value_or(false) && !a->ClientTerminal()) {
      // Moved off by a drain (or alloc stop): a serving node gets a new one below.
      plan.upserts.push_back(StopCopy(*a, kAllocMigrating));
      ++plan.stopped;
      ++plan.desired_tg_updates[a->task_group].migrate;
      continue;
    }
    if (job.FindGroup(a->task_group) != nullptr && keeping.contains(a->node_id)) {
      ++plan.desired_tg_updates[a->task_group].ignore;
      continue;  // neither placed again nor stopped
    }
    if (auto d = disconnected.find(a->node_id); d != disconnected.end() && !a->ClientTerminal()) {
      // Unknown (and kept) within the window: a system allocation has no other node.
      const model::TaskGroup* g = job.FindGroup(a->task_group);
      if (g == nullptr || !KeepUnknown(in, *g, a, d->second, plan)) {
        plan.upserts.push_back(LostCopy(*a));
        ++plan.lost;
        ++plan.desired_tg_updates[a->task_group].stop;
      } else {
        ++plan.desired_tg_updates[a->task_group].ignore;
      }
      continue;
    }
    if (job.FindGroup(a->task_group) == nullptr || !serving.contains(a->node_id)) {
      if (lost_nodes.contains(a->node_id) && !a->ClientTerminal()) {
        plan.upserts.push_back(LostCopy(*a));
        ++plan.lost;
        ++plan.desired_tg_updates[a->task_group].stop;
      } else if (!a->ClientTerminal()) {
        plan.upserts.push_back(StopCopy(
            *a, job.FindGroup(a->task_group) == nullptr ? kAllocNotNeeded : kNodeNotServing));
        ++plan.stopped;
        ++plan.desired_tg_updates[a->task_group].stop;
      }
      continue;
    }
    if (a->ClientTerminal() && !CurrentVersion(*a, job))
      continue;  // finished under an older version: the new one runs again
    slots[{a->task_group, a->node_id}].push_back(a);
  }
  return slots;
}

// Per group and serving node: keeps the oldest allocation (stopping duplicates), and
// updates it in place or replaces it for a new version of the job.
SystemWork Reconcile(const SchedulerInput& in, const std::set<std::string>& serving,
                     PlanResult& plan) {
  const model::Job& job = *in.job;
  auto slots = LiveSlots(in, serving, plan);
  SystemWork w;
  for (const model::TaskGroup& g : job.task_groups) {
    model::DesiredUpdates& updates = plan.desired_tg_updates[g.name];
    std::vector<AllocPtr> destructive;  // by node ID, the order replacements go in
    for (const std::string& node : serving) {
      std::vector<AllocPtr>& allocs = slots[{g.name, node}];
      std::sort(allocs.begin(), allocs.end(), [](const AllocPtr& a, const AllocPtr& b) {
        return a->create_index < b->create_index;
      });
      for (size_t i = 1; i < allocs.size(); ++i) {
        if (!allocs[i]->ClientTerminal()) {
          plan.upserts.push_back(StopCopy(*allocs[i], kAllocNotNeeded));
          ++plan.stopped;
          ++updates.stop;
        }
      }
      if (allocs.empty()) {
        w.to_place[g.name].insert(node);  // counted once pass 2 knows it is the job's
        continue;
      }
      const AllocPtr& kept = allocs.front();
      if (CurrentVersion(*kept, job) || kept->ClientTerminal()) {
        ++updates.ignore;
        continue;
      }
      if (CanUpdateInPlace(in, g, *kept)) {
        UpdateInPlace(in, *kept, plan);
        ++updates.in_place_update;
      } else {
        ++updates.destructive_update;  // counted whether or not this pass makes it
        destructive.push_back(kept);
      }
    }
    const RollingGate gate = GateRollingUpdates(in, g, destructive.size());
    for (size_t i = 0; i < gate.allowed; ++i) {
      const AllocPtr& old = destructive[i];
      plan.upserts.push_back(StopCopy(*old, kAllocUpdating));
      ++plan.stopped;
      w.to_place[g.name].insert(old->node_id);
      w.replaces[{g.name, old->node_id}] = old;
    }
    if (gate.next && (!w.next_batch || *gate.next < *w.next_batch))
      w.next_batch = gate.next;
  }
  return w;
}

// Destructive updates whose new version did not fit the node even with the old
// allocation gone: the old ones keep running (their stops are taken back) rather than
// leave their nodes without the job.
void KeepOldVersions(const std::set<std::string>& kept, PlanResult& plan) {
  if (kept.empty())
    return;
  const size_t before = plan.upserts.size();
  std::erase_if(plan.upserts, [&](const model::Allocation& u) {
    return u.desired_status == model::kDesiredStop && kept.contains(u.id);
  });
  plan.stopped -= static_cast<int>(before - plan.upserts.size());
}

}  // namespace

PlanResult ScheduleSystem(const SchedulerInput& in) {
  PlanResult plan;
  std::mt19937_64 rng(in.seed);
  const model::Job& job = *in.job;
  std::set<std::string> serving;
  for (const NodePtr& n : in.nodes) {
    if (NodeServesJob(job, *n))
      serving.insert(n->id);
  }
  SystemWork w = Reconcile(in, serving, plan);

  // Pass 2: place one on each node that lacks it. A node filtered by a constraint or a
  // missing driver is simply not this job's; one without room is a failed placement.
  std::map<std::string, NodeUsage> usage = UsageAfter(in.node_allocs, plan);
  std::map<std::string, const model::Node*> nodes;
  for (const NodePtr& n : in.nodes)
    nodes[n->id] = n.get();
  std::set<std::string> kept_old;  // old allocations whose replacement did not fit
  for (const model::TaskGroup& g : job.task_groups) {
    plan.queued[g.name] = 0;
    const GroupAsk ask = AskOf(g);
    int failed = 0;
    model::AllocMetric failed_metric;
    for (const std::string& node_id : w.to_place[g.name]) {
      const model::Node& node = *nodes.at(node_id);
      model::AllocMetric metric;
      ++metric.nodes_evaluated;
      ++metric.nodes_available;
      std::optional<Fit> fit = FitOnNode(job, g, node, usage[node_id], ask, rng, metric);
      const auto replaced = w.replaces.find({g.name, node_id});
      // A node the job no longer fits (a constraint or a driver) is not the job's: what
      // ran there was stopped, not replaced. One without room is a placement that fails.
      model::DesiredUpdates& updates = plan.desired_tg_updates[g.name];
      if (!fit && metric.nodes_exhausted == 0) {
        if (replaced != w.replaces.end()) {
          --updates.destructive_update;
          ++updates.stop;
        }
      } else if (replaced == w.replaces.end()) {
        ++updates.place;
      }
      if (!fit) {
        if (metric.nodes_exhausted > 0) {
          if (replaced != w.replaces.end()) {
            kept_old.insert(replaced->second->id);
            AddUsage(usage[node_id], *replaced->second);
          }
          if (failed++ == 0) {
            failed_metric = metric;
          } else {
            ++failed_metric.nodes_evaluated;
            ++failed_metric.nodes_exhausted;
            for (const auto& [dim, n] : metric.dimension_exhausted)
              failed_metric.dimension_exhausted[dim] += n;
          }
        }
        continue;
      }
      model::Allocation a = NewAlloc(in, g, 0, node, *std::move(fit), ask, metric);
      if (replaced != w.replaces.end())
        a.previous_allocation = replaced->second->id;
      AddUsage(usage[node_id], a);
      plan.upserts.push_back(std::move(a));
      ++plan.placed;
    }
    RecordFailedPlacements(plan, g.name, failed, std::move(failed_metric));
  }
  KeepOldVersions(kept_old, plan);
  if (w.next_batch) {
    plan.followup_evals.push_back(FollowupEval(in, model::kTriggerRollingUpdate,
                                               "created for a rolling update's next batch",
                                               *w.next_batch));
  }
  return plan;
}

}  // namespace drover::server
