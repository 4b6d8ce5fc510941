// StateStore's deployments table: its objects, its record and the counters that follow
// the deployments' allocations.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "server/state_layout.h"
#include "server/state_store.h"
#include "state/state_db.h"

namespace drover::server {

DeploymentPtr StateStore::UpsertDeployment(model::Deployment d) {
  const uint64_t index = Bump(Table::kDeployments);
  const int64_t now = common::ToUnixNanos(clock_.Now());
  if (auto it = deployments_.find(d.id); it != deployments_.end()) {
    d.create_index = it->second->create_index;
    d.create_time = it->second->create_time;
  } else {
    d.create_index = index;
    d.create_time = now;
  }
  d.modify_index = index;
  d.modify_time = now;
  auto stored = std::make_shared<const model::Deployment>(std::move(d));
  PutDeployment(stored);
  Save(stored);
  return stored;
}

void StateStore::PutDeployment(const DeploymentPtr& d) {
  deployments_[d->id] = d;
  deployments_by_job_[JobKey(d->namespace_, d->job_id)].insert(d->id);
  if (d->status == model::kDeploymentRunning)
    running_deployments_.insert(d->id);
  else
    running_deployments_.erase(d->id);
}

std::vector<DeploymentPtr> StateStore::RunningDeployments() const {
  std::vector<DeploymentPtr> out;
  out.reserve(running_deployments_.size());
  for (const std::string& id : running_deployments_)
    out.push_back(deployments_.at(id));
  return out;
}

DeploymentPtr StateStore::GetDeployment(const std::string& id) const {
  auto it = deployments_.find(id);
  return it == deployments_.end() ? nullptr : it->second;
}

std::vector<DeploymentPtr> StateStore::ListDeployments(const std::string& ns,
                                                       const std::string& prefix) const {
  std::vector<DeploymentPtr> out;
  for (auto it = deployments_.lower_bound(prefix);
       it != deployments_.end() && layout::HasPrefix(it->first, prefix); ++it) {
    if (layout::NamespaceMatches(ns, it->second->namespace_))
      out.push_back(it->second);
  }
  return out;
}

std::vector<DeploymentPtr> StateStore::DeploymentsByJob(const std::string& ns,
                                                        const std::string& job_id) const {
  std::vector<DeploymentPtr> out;
  if (auto it = deployments_by_job_.find(JobKey(ns, job_id)); it != deployments_by_job_.end()) {
    for (const std::string& id : it->second)
      out.push_back(deployments_.at(id));
  }
  std::sort(out.begin(), out.end(), [](const DeploymentPtr& a, const DeploymentPtr& b) {
    return a->create_index > b->create_index;
  });
  return out;
}

DeploymentPtr StateStore::LatestDeployment(const std::string& ns, const std::string& job_id) const {
  DeploymentPtr latest;
  if (auto it = deployments_by_job_.find(JobKey(ns, job_id)); it != deployments_by_job_.end()) {
    for (const std::string& id : it->second) {
      const DeploymentPtr& d = deployments_.at(id);
      if (!latest || d->create_index > latest->create_index)
        latest = d;
    }
  }
  return latest;
}

void StateStore::DeploymentsChanged(bool changed, uint64_t index) {
  if (!changed)
    return;
  table_index_[Table::kDeployments] = index;
  SaveIndexes();
}

void StateStore::RestoreDeployment(const std::string& id, DeploymentPtr before) {
  if (before) {
    PutDeployment(before);
    Save(before);
  } else {
    EraseDeployment(id);
  }
  Bump(Table::kDeployments);
}

void StateStore::EraseDeployment(const std::string& id) {
  auto it = deployments_.find(id);
  if (it == deployments_.end())
    return;
  Unindex(deployments_by_job_, JobKey(it->second->namespace_, it->second->job_id), id);
  running_deployments_.erase(id);
  deployments_.erase(it);
  ForgetDeployment(id);
}

bool StateStore::TrackDeploymentAlloc(const model::Allocation* before,
                                      const model::Allocation& after) {
  if (after.deployment_id.empty())
    return false;
  auto it = deployments_.find(after.deployment_id);
  if (it == deployments_.end() || !it->second->Active())
    return false;
  if (!it->second->task_groups.contains(after.task_group))
    return false;
  // Placed into the deployment: new, or updated in place from another one.
  const bool joined = before == nullptr || before->deployment_id != after.deployment_id;
  // The health verdict before and after: kNone until one is given. (Plain ints: GCC 12
  // at -O2 sees std::optional<bool> comparisons here as maybe uninitialized.)
  enum Verdict { kNone, kUnhealthy, kHealthy };
  const auto verdict = [](const std::optional<model::AllocDeploymentStatus>& status) {
    if (!status || !status->healthy)
      return kNone;
    return *status->healthy ? kHealthy : kUnhealthy;
  };
  const Verdict was = joined ? kNone : verdict(before->deployment_status);
  const Verdict now = verdict(after.deployment_status);
  if (!joined && was == now)
    return false;  // most updates: nothing the deployment counts changed
  model::Deployment d = *it->second;
  model::DeploymentState& s = d.task_groups.at(after.task_group);
  if (joined) {
    ++s.placed_allocs;
    // The progress deadline runs from the first placement.
    if (s.require_progress_by == common::Time{} && s.progress_deadline > common::Duration::zero())
      s.require_progress_by = clock_.Now() + s.progress_deadline;
    if (after.deployment_status && after.deployment_status->canary)
      s.placed_canaries.push_back(after.id);
  }
  // A verdict given, or changed (allocation-health overrides a client's): the counters
  // follow, both ways.
  if (was != kNone && was != now)
    --(was == kHealthy ? s.healthy_allocs : s.unhealthy_allocs);
  if (now != kNone && was != now) {
    if (now == kHealthy) {
      ++s.healthy_allocs;
      // Progress: the deadline moves to the healthy time plus progress_deadline.
      if (s.progress_deadline > common::Duration::zero()) {
        s.require_progress_by = std::max(s.require_progress_by,
                                         after.deployment_status->timestamp + s.progress_deadline);
      }
    } else {
      ++s.unhealthy_allocs;
    }
  }
  d.modify_index = index_;
  d.modify_time = common::ToUnixNanos(clock_.Now());
  PutDeployment(std::make_shared<const model::Deployment>(std::move(d)));
  Save(it->second);
  return true;
}

absl::Status StateStore::ApplyDeploymentRecord(const std::string& id,
                                               const std::optional<std::string>& value) {
  if (!value) {
    EraseDeployment(id);
    return absl::OkStatus();
  }
  auto j = state::Decode("Deployment", *value);
  if (!j.ok())
    return j.status();
  auto d = codec::DeploymentFromJson(*j);
  if (!d.ok())
    return d.status();
  if (d->id != id)
    return absl::InvalidArgumentError("the key does not name the deployment it holds");
  RaiseIndex(Table::kDeployments, std::max(d->modify_index, d->create_index));
  PutDeployment(std::make_shared<const model::Deployment>(*std::move(d)));
  Publish(deployments_.at(id));
  return absl::OkStatus();
}

}  // namespace drover::server
