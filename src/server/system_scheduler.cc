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
  std::map<std::pair<std::string, std::string>, std::string> replaces;
};

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
      if (UpdateInPlaceOrStop(in, g, kept, plan)) {
        ++updates.in_place_update;
      } else {
        ++updates.destructive_update;
        w.to_place[g.name].insert(node);
        w.replaces[{g.name, node}] = kept->id;
      }
    }
  }
  return w;
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
        a.previous_allocation = replaced->second;
      AddUsage(usage[node_id], a);
      plan.upserts.push_back(std::move(a));
      ++plan.placed;
    }
    RecordFailedPlacements(plan, g.name, failed, std::move(failed_metric));
  }
  return plan;
}

}  // namespace drover::server
