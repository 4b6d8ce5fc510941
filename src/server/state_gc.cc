// StateStore::Remove: what the garbage collection takes out (core_gc.h).
#include "server/state_store.h"

namespace drover::server {

void StateStore::Unindex(std::map<std::string, std::set<std::string>>& index,
                         const std::string& key, const std::string& id) {
  auto it = index.find(key);
  if (it == index.end())
    return;
  it->second.erase(id);
  if (it->second.empty())
    index.erase(it);
}

void StateStore::Remove(const Removal& removal) {
  std::set<std::string> nodes_changed;
  bool allocs = false;
  for (const std::string& id : removal.allocs) {
    auto it = allocs_.find(id);
    if (it == allocs_.end())
      continue;
    const AllocPtr a = it->second;
    allocs_.erase(it);
    Unindex(allocs_by_job_, JobKey(a->namespace_, a->job_id), id);
    Unindex(allocs_by_node_, a->node_id, id);
    ForgetAlloc(id);
    nodes_changed.insert(a->node_id);
    allocs = true;
  }
  bool evals = false;
  for (const std::string& id : removal.evals) {
    auto it = evals_.find(id);
    if (it == evals_.end())
      continue;
    Unindex(evals_by_job_, JobKey(it->second->namespace_, it->second->job_id), id);
    evals_.erase(it);
    ForgetEval(id);
    evals = true;
  }
  bool jobs = false;
  for (const auto& [ns, id] : removal.jobs) {
    const std::string key = JobKey(ns, id);
    if (jobs_.erase(key) == 0)
      continue;
    job_versions_.erase(key);
    ForgetJob(ns, id);
    DropScalingEvents(ns, id);
    DropPeriodicLaunch(ns, id);
    jobs = true;
  }
  bool nodes = false;
  for (const std::string& id : removal.nodes) {
    if (nodes_.erase(id) == 0)
      continue;
    ForgetNode(id);
    node_allocs_index_.erase(id);
    nodes_changed.erase(id);
    nodes = true;
  }
  bool deployments = false;
  for (const std::string& id : removal.deployments) {
    if (!deployments_.contains(id))
      continue;
    EraseDeployment(id);
    deployments = true;
  }
  if (deployments)
    Bump(Table::kDeployments);
  if (jobs)
    Bump(Table::kJobs);
  if (evals)
    Bump(Table::kEvals);
  if (nodes)
    Bump(Table::kNodes);
  if (allocs) {
    const uint64_t index = Bump(Table::kAllocs);
    // Their clients learn that the allocations are gone (and forget them too).
    for (const std::string& node : nodes_changed)
      NodeAllocsChanged(node, index);
  }
}

}  // namespace drover::server
