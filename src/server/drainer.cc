#include "server/drainer.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace drover::server {
namespace {

bool IsSystem(const model::Allocation& a) {
  return a.job && (a.job->type == model::kJobTypeSystem || a.job->type == model::kJobTypeSysbatch);
}

bool IsBatch(const model::Allocation& a) {
  return a.job && a.job->type == model::kJobTypeBatch;
}

bool Marked(const model::Allocation& a) {
  return a.desired_transition.migrate.value_or(false);
}

// Still meant to run: neither told to stop nor finished.
bool Live(const model::Allocation& a) {
  return a.desired_status == model::kDesiredRun && !a.ClientTerminal();
}

bool Forced(const model::DrainStrategy& s, common::Time now) {
  return s.deadline < common::Duration::zero() ||
         (s.force_deadline != common::Time{} && now >= s.force_deadline);
}

using GroupKey = std::tuple<std::string, std::string, std::string>;  // ns, job, group

// How many of a group's candidates may move now: its healthy allocations beyond
// count - max_parallel.
size_t Allowance(const StateStore& state, const GroupKey& key) {
  const auto& [ns, job_id, group] = key;
  JobPtr job = state.GetJob(ns, job_id);
  const model::TaskGroup* g = job ? job->FindGroup(group) : nullptr;
  if (g == nullptr || job->stop)
    return SIZE_MAX;  // nothing to keep running: the scheduler stops these anyway
  const int max_parallel = g->migrate ? g->migrate->max_parallel : 1;
  int healthy = 0;
  for (const AllocPtr& a : state.AllocsByJob(ns, job_id)) {
    if (a->task_group == group && Live(*a) && !Marked(*a) && a->deployment_status &&
        a->deployment_status->healthy.value_or(false))
      ++healthy;
  }
  const int allowed = healthy - (g->count - max_parallel);
  return allowed > 0 ? static_cast<size_t>(allowed) : 0;
}

}  // namespace

DrainPlan PlanDrain(const StateStore& state, const std::vector<NodePtr>& draining,
                    common::Time now) {
  DrainPlan plan;
  std::map<GroupKey, std::vector<AllocPtr>> candidates;
  for (const NodePtr& node : draining) {
    const model::DrainStrategy& strategy = *node->drain_strategy;
    const bool forced = Forced(strategy, now);
    if (!forced && strategy.force_deadline != common::Time{})
      plan.next_deadline =
          std::min(plan.next_deadline.value_or(strategy.force_deadline), strategy.force_deadline);
    std::vector<AllocPtr> system;
    bool others_left = false;
    for (const AllocPtr& a : state.AllocsByNode(node->id)) {
      if (!Live(*a))
        continue;
      if (IsSystem(*a)) {
        system.push_back(a);
        continue;
      }
      others_left = true;
      if (Marked(*a)) {
        plan.marked.push_back(a);
        continue;
      }
      if (forced) {
        plan.migrate.push_back(a);
      } else if (!IsBatch(*a)) {
        candidates[{a->namespace_, a->job_id, a->task_group}].push_back(a);
      }
    }
    if (others_left)
      continue;
    if (strategy.ignore_system_jobs || system.empty()) {
      plan.complete.push_back(node);
      continue;
    }
    for (const AllocPtr& a : system)
      (Marked(*a) ? plan.marked : plan.migrate).push_back(a);
  }
  for (auto& [key, allocs] : candidates) {
    std::sort(allocs.begin(), allocs.end(), [](const AllocPtr& a, const AllocPtr& b) {
      return a->create_index < b->create_index;
    });
    const size_t n = std::min(Allowance(state, key), allocs.size());
    plan.migrate.insert(plan.migrate.end(), allocs.begin(), allocs.begin() + n);
  }
  return plan;
}

}  // namespace drover::server
