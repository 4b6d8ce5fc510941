#include "server/state_store.h"

#include <algorithm>
#include <set>

#include "common/ids.h"
#include "server/state_layout.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

using layout::HasPrefix;
using layout::NamespaceMatches;

bool EvalTerminal(const model::Evaluation& e) {
  return e.status == model::kEvalComplete || e.status == model::kEvalFailed ||
         e.status == model::kEvalCanceled;
}

}  // namespace

bool JobSpecChanged(const model::Job& a, const model::Job& b) {
  model::Job x = a;
  model::Job y = b;
  for (model::Job* j : {&x, &y}) {
    j->status.clear();
    j->status_description.clear();
    j->stable = false;
    j->version = 0;
    j->submit_time = 0;
    j->create_index = j->modify_index = j->job_modify_index = 0;
  }
  return !(x == y);
}

StateStore::StateStore(asio::any_io_executor executor, common::Clock& clock)
    : executor_(executor),
      clock_(clock),
      changed_(executor, asio::steady_timer::time_point::max()) {
  for (Table t :
       {Table::kJobs, Table::kEvals, Table::kAllocs, Table::kNodes, Table::kDeployments}) {
    table_index_[t] = 1;
  }
}

uint64_t StateStore::TableIndex(Table t) const {
  return table_index_.at(t);
}

uint64_t StateStore::Bump(Table t) {
  ++index_;
  table_index_[t] = index_;
  changed_.cancel();
  SaveIndexes();
  return index_;
}

asio::awaitable<uint64_t> StateStore::BlockUntil(std::vector<Table> tables, uint64_t min_index,
                                                 common::Duration max_wait) {
  auto current = [&] {
    uint64_t m = 0;
    for (Table t : tables)
      m = std::max(m, TableIndex(t));
    return m;
  };
  if (min_index == 0 || current() > min_index) {
    co_return current();
  }
  const common::Time deadline = clock_.Now() + max_wait;
  while (current() <= min_index) {
    const common::Time now = clock_.Now();
    if (now >= deadline) {
      break;
    }
    auto r = co_await (changed_.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                       clock_.Sleep(deadline - now));
    if (r.index() == 1) {
      break;
    }
  }
  co_return current();
}

model::Job StateStore::PreviewJob(model::Job job) const {
  AssignVersion(job, index_ + 1);
  return job;
}

void StateStore::AssignVersion(model::Job& job, uint64_t index) const {
  auto existing = jobs_.find(JobKey(job.namespace_, job.id));
  const model::Job* prev_job = existing != jobs_.end() ? existing->second.get() : nullptr;
  // A scaling policy keeps its ID while its group stays (server-managed: carried over
  // before the specs are compared).
  std::map<std::string, const model::ScalingPolicy*> prev_policies;
  if (prev_job != nullptr) {
    for (const model::TaskGroup& g : prev_job->task_groups) {
      if (g.scaling)
        prev_policies[g.name] = &*g.scaling;
    }
  }
  for (model::TaskGroup& g : job.task_groups) {
    auto prev = prev_policies.find(g.name);
    if (!g.scaling || prev == prev_policies.end())
      continue;
    g.scaling->id = prev->second->id;
    g.scaling->create_index = prev->second->create_index;
    g.scaling->modify_index = prev->second->modify_index;
    if (*g.scaling != *prev->second)
      g.scaling->modify_index = index;
  }
  for (model::TaskGroup& g : job.task_groups) {
    // A new policy: whatever ID and indexes the request carried, the servers' are used.
    if (g.scaling && !prev_policies.contains(g.name)) {
      g.scaling->id = common::NewUuid();
      g.scaling->create_index = g.scaling->modify_index = index;
    }
  }
  if (existing != jobs_.end()) {
    const model::Job& prev = *existing->second;
    job.create_index = prev.create_index;
    if (JobSpecChanged(prev, job)) {
      job.version = prev.version + 1;
      job.job_modify_index = index;
      job.stable = false;
    } else {
      job.version = prev.version;
      job.job_modify_index = prev.job_modify_index;
      job.stable = prev.stable;
    }
    job.status = prev.status;
  } else {
    job.create_index = index;
    job.job_modify_index = index;
    job.version = 0;
    job.stable = false;
    job.status = model::kJobStatusPending;
  }
  job.modify_index = index;
  job.submit_time = common::ToUnixNanos(clock_.Now());
}

uint64_t StateStore::BumpGlobal() {
  ++index_;
  changed_.cancel();
  SaveIndexes();
  return index_;
}

model::SchedulerConfig StateStore::SetSchedulerConfig(model::SchedulerConfig config) {
  const uint64_t index = BumpGlobal();
  config.create_index = scheduler_config_ ? scheduler_config_->create_index : index;
  config.modify_index = index;
  scheduler_config_ = config;
  SaveSchedulerConfig();
  return config;
}

void StateStore::RestoreSchedulerConfig(std::optional<model::SchedulerConfig> before) {
  scheduler_config_ = std::move(before);
  BumpGlobal();
  SaveSchedulerConfig();
}

JobPtr StateStore::UpsertJob(model::Job job) {
  const std::string key = JobKey(job.namespace_, job.id);
  AssignVersion(job, Bump(Table::kJobs));
  auto stored = std::make_shared<const model::Job>(std::move(job));
  jobs_[key] = stored;
  auto& versions = job_versions_[key];
  if (versions.empty() || versions.front()->version != stored->version) {
    versions.insert(versions.begin(), stored);
    TrimVersions(versions);
  } else {
    versions.front() = stored;
  }
  Save(stored);
  RefreshJobStatus(stored->namespace_, stored->id);
  return jobs_[key];
}

void StateStore::TrimVersions(std::vector<JobPtr>& versions) {
  if (versions.size() <= tracked_versions_)
    return;
  // The newest stable version is what a revert to the last good one goes back to: it
  // stays beyond the count.
  const auto keep_end = versions.begin() + static_cast<std::ptrdiff_t>(tracked_versions_);
  auto stable =
      std::find_if(versions.begin(), versions.end(), [](const JobPtr& j) { return j->stable; });
  const JobPtr extra = stable != versions.end() && stable >= keep_end ? *stable : nullptr;
  for (auto it = keep_end; it != versions.end(); ++it) {
    if (*it != extra)
      ForgetJobVersion(**it);
  }
  versions.erase(keep_end, versions.end());
  if (extra)
    versions.push_back(extra);
}

absl::StatusOr<JobPtr> StateStore::SetJobStability(const std::string& ns, const std::string& id,
                                                   uint64_t version, bool stable) {
  const std::string key = JobKey(ns, id);
  auto versions = job_versions_.find(key);
  auto it = versions == job_versions_.end()
                ? std::vector<JobPtr>::iterator{}
                : std::find_if(versions->second.begin(), versions->second.end(),
                               [&](const JobPtr& j) { return j->version == version; });
  if (versions == job_versions_.end() || it == versions->second.end()) {
    return absl::NotFoundError("job \"" + id + "\" at version " + std::to_string(version) +
                               " not found");
  }
  model::Job updated = **it;
  updated.stable = stable;
  updated.modify_index = Bump(Table::kJobs);
  *it = std::make_shared<const model::Job>(std::move(updated));
  Persist(*it);
  if (it == versions->second.begin()) {
    jobs_[key] = *it;
    Publish(*it);
  }
  return *it;
}

model::ScalingEvent StateStore::AddScalingEvent(const std::string& ns, const std::string& job_id,
                                                const std::string& group,
                                                model::ScalingEvent event) {
  const std::string key = JobKey(ns, job_id);
  // The jobs table's: GET /v1/job/:id/scale blocks on it.
  const uint64_t index = Bump(Table::kJobs);
  event.create_index = index;
  auto it = scaling_events_.find(key);
  model::JobScalingEvents updated =
      it != scaling_events_.end()
          ? *it->second
          : model::JobScalingEvents{.namespace_ = ns, .job_id = job_id, .events = {}};
  std::vector<model::ScalingEvent>& list = updated.events[group];
  list.insert(list.begin(), event);
  if (list.size() > model::JobScalingEvents::kMaxScalingEvents)
    list.resize(model::JobScalingEvents::kMaxScalingEvents);
  updated.modify_index = index;
  scaling_events_[key] = std::make_shared<const model::JobScalingEvents>(std::move(updated));
  SaveScalingEvents(key);
  return event;
}

std::shared_ptr<const model::JobScalingEvents> StateStore::ScalingEvents(
    const std::string& ns, const std::string& job_id) const {
  auto it = scaling_events_.find(JobKey(ns, job_id));
  return it == scaling_events_.end() ? nullptr : it->second;
}

void StateStore::DropScalingEvents(const std::string& ns, const std::string& id) {
  const std::string key = JobKey(ns, id);
  if (scaling_events_.erase(key) > 0)
    SaveScalingEvents(key);
}

JobPtr StateStore::GetJob(const std::string& ns, const std::string& id) const {
  auto it = jobs_.find(JobKey(ns, id));
  return it == jobs_.end() ? nullptr : it->second;
}

std::vector<JobPtr> StateStore::ListJobs(const std::string& ns, const std::string& prefix) const {
  std::vector<JobPtr> out;
  for (const auto& [key, job] : jobs_) {
    if (NamespaceMatches(ns, job->namespace_) && HasPrefix(job->id, prefix)) {
      out.push_back(job);
    }
  }
  std::sort(out.begin(), out.end(), [](const JobPtr& a, const JobPtr& b) { return a->id < b->id; });
  return out;
}

std::vector<JobPtr> StateStore::JobVersions(const std::string& ns, const std::string& id) const {
  auto it = job_versions_.find(JobKey(ns, id));
  return it == job_versions_.end() ? std::vector<JobPtr>{} : it->second;
}

bool StateStore::DeleteJob(const std::string& ns, const std::string& id) {
  const std::string key = JobKey(ns, id);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) {
    return false;
  }
  const JobPtr gone = it->second;
  jobs_.erase(it);
  job_versions_.erase(key);
  ForgetJob(ns, id);
  DropScalingEvents(ns, id);
  DropPeriodicLaunch(ns, id);
  Bump(Table::kJobs);
  Publish(gone, "JobDeregistered");
  // Nomad's purge takes the job's deployments with it.
  if (auto it = deployments_by_job_.find(key); it != deployments_by_job_.end()) {
    const std::set<std::string> ids = it->second;
    for (const std::string& d : ids)
      EraseDeployment(d);
    Bump(Table::kDeployments);
  }
  return true;
}

StateStore::JobSnapshot StateStore::SnapshotJob(const std::string& ns,
                                                const std::string& id) const {
  JobSnapshot s{.ns = ns, .id = id, .job = GetJob(ns, id)};
  if (auto it = job_versions_.find(JobKey(ns, id)); it != job_versions_.end())
    s.versions = it->second;
  s.scaling_events = ScalingEvents(ns, id);
  s.periodic_launch = LastPeriodicLaunch(ns, id);
  return s;
}

void StateStore::RestoreJob(const JobSnapshot& before) {
  const std::string key = JobKey(before.ns, before.id);
  const JobPtr after = GetJob(before.ns, before.id);
  if (before.scaling_events != ScalingEvents(before.ns, before.id)) {
    if (before.scaling_events)
      scaling_events_[key] = before.scaling_events;
    else
      scaling_events_.erase(key);
    SaveScalingEvents(key);
  }
  if (before.periodic_launch != LastPeriodicLaunch(before.ns, before.id))
    RestorePeriodicLaunch(before.ns, before.id, before.periodic_launch);
  ForgetJob(before.ns, before.id);
  if (before.job) {
    jobs_[key] = before.job;
    job_versions_[key] = before.versions;
    for (const JobPtr& v : before.versions)
      Persist(v);
  } else {
    jobs_.erase(key);
    job_versions_.erase(key);
  }
  Bump(Table::kJobs);
  // The feed tells the job as it is again (or gone: an undone registration).
  if (before.job)
    Publish(before.job);
  else if (after)
    Publish(after, "JobDeregistered");
  RefreshJobStatus(before.ns, before.id);
}

void StateStore::RemoveEval(const std::string& id) {
  auto it = evals_.find(id);
  if (it == evals_.end())
    return;
  const EvalPtr e = it->second;
  evals_.erase(it);
  if (auto by_job = evals_by_job_.find(JobKey(e->namespace_, e->job_id));
      by_job != evals_by_job_.end()) {
    by_job->second.erase(id);
  }
  ForgetEval(id);
  Bump(Table::kEvals);
  RefreshJobStatus(e->namespace_, e->job_id);
}

void StateStore::RestoreAllocs(const std::vector<AllocPtr>& before,
                               const std::vector<AllocPtr>& after) {
  bool changed = false;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    auto it = allocs_.find(before[i]->id);
    if (it == allocs_.end() || it->second != after[i])
      continue;  // changed since: that change stands
    it->second = before[i];
    Save(before[i]);
    changed = true;
  }
  if (!changed)
    return;
  const uint64_t index = Bump(Table::kAllocs);
  for (const AllocPtr& a : before)
    NodeAllocsChanged(a->node_id, index);
}

uint64_t StateStore::NodeAllocsIndex(const std::string& node_id) const {
  auto it = node_allocs_index_.find(node_id);
  return it == node_allocs_index_.end() ? 0 : it->second;
}

void StateStore::NodeAllocsChanged(const std::string& node_id, uint64_t index) {
  uint64_t& seen = node_allocs_index_[node_id];
  seen = std::max(seen, index);
  if (auto it = node_allocs_changed_.find(node_id); it != node_allocs_changed_.end()) {
    it->second->Set();
    node_allocs_changed_.erase(it);
  }
}

asio::awaitable<void> StateStore::WaitNodeAllocs(std::string node_id, uint64_t min_index,
                                                 common::Duration max_wait) {
  const common::Time deadline = clock_.Now() + max_wait;
  while (NodeAllocsIndex(node_id) <= min_index) {
    const common::Time now = clock_.Now();
    if (now >= deadline)
      break;
    std::shared_ptr<common::Event>& slot = node_allocs_changed_[node_id];
    if (!slot)
      slot = std::make_shared<common::Event>(executor_);
    const std::shared_ptr<common::Event> changed = slot;  // alive across the wait
    auto woken = changed->Wait();
    auto timeout = clock_.Sleep(deadline - now);
    co_await (std::move(woken) || std::move(timeout));
  }
}

model::JobSummary StateStore::JobSummary(const model::Job& job) const {
  model::JobSummary s;
  s.job_id = job.id;
  s.namespace_ = job.namespace_;
  s.create_index = job.create_index;
  s.modify_index = job.modify_index;
  for (const model::TaskGroup& g : job.task_groups) {
    s.summary[g.name] = {};
  }
  if (job.IsPeriodic() || job.IsParameterized()) {
    for (const JobPtr& child : ChildJobs(job.namespace_, job.id)) {
      if (child->status == model::kJobStatusRunning)
        ++s.children.running;
      else if (child->status == model::kJobStatusDead)
        ++s.children.dead;
      else
        ++s.children.pending;
      s.modify_index = std::max(s.modify_index, child->modify_index);
    }
  }
  for (const AllocPtr& a : AllocsByJob(job.namespace_, job.id)) {
    auto& tg = s.summary[a->task_group];
    const std::string& cs = a->client_status;
    if (cs == model::kClientPending) {
      ++tg.starting;
    } else if (cs == model::kClientRunning) {
      ++tg.running;
    } else if (cs == model::kClientComplete) {
      ++tg.complete;
    } else if (cs == model::kClientFailed) {
      ++tg.failed;
    } else if (cs == model::kClientLost) {
      ++tg.lost;
    } else if (cs == model::kClientUnknown) {
      ++tg.unknown;
    }
    s.modify_index = std::max(s.modify_index, a->modify_index);
  }
  // Queued: what the newest evaluation could not place.
  EvalPtr newest;
  for (const EvalPtr& e : EvalsByJob(job.namespace_, job.id)) {
    if (!newest || e->create_index > newest->create_index)
      newest = e;
  }
  if (newest) {
    for (const auto& [group, n] : newest->queued_allocations) {
      if (s.summary.contains(group))
        s.summary[group].queued = n;
    }
  }
  return s;
}

void StateStore::UpsertEvals(std::vector<model::Evaluation> evals) {
  const uint64_t index = Bump(Table::kEvals);
  const int64_t now = common::ToUnixNanos(clock_.Now());
  // Each job once: its status is refreshed from all of its allocations.
  std::set<std::pair<std::string, std::string>> jobs;
  for (model::Evaluation& e : evals) {
    auto it = evals_.find(e.id);
    e.create_index = it == evals_.end() ? index : it->second->create_index;
    e.create_time = it == evals_.end() ? now : it->second->create_time;
    e.modify_index = index;
    e.modify_time = now;
    jobs.emplace(e.namespace_, e.job_id);
    const std::string id = e.id;  // the right side is evaluated (and moved) first
    evals_by_job_[JobKey(e.namespace_, e.job_id)].insert(id);
    evals_[id] = std::make_shared<const model::Evaluation>(std::move(e));
    Save(evals_[id]);
  }
  for (const auto& [ns, job] : jobs)
    RefreshJobStatus(ns, job);
}

EvalPtr StateStore::GetEval(const std::string& id) const {
  auto it = evals_.find(id);
  return it == evals_.end() ? nullptr : it->second;
}

std::vector<EvalPtr> StateStore::ListEvals(const std::string& ns, const std::string& prefix) const {
  std::vector<EvalPtr> out;
  for (const auto& [id, e] : evals_) {
    if (NamespaceMatches(ns, e->namespace_) && HasPrefix(id, prefix))
      out.push_back(e);
  }
  return out;
}

std::vector<EvalPtr> StateStore::EvalsByJob(const std::string& ns,
                                            const std::string& job_id) const {
  std::vector<EvalPtr> out;
  if (auto it = evals_by_job_.find(JobKey(ns, job_id)); it != evals_by_job_.end()) {
    for (const std::string& id : it->second)
      out.push_back(evals_.at(id));
  }
  return out;
}

void StateStore::UpsertAllocs(std::vector<model::Allocation> allocs) {
  const uint64_t index = Bump(Table::kAllocs);
  const int64_t now = common::ToUnixNanos(clock_.Now());
  // Each job once: its status is refreshed from all of its allocations.
  std::set<std::pair<std::string, std::string>> jobs;
  bool deployments_changed = false;
  for (model::Allocation& a : allocs) {
    auto it = allocs_.find(a.id);
    if (it == allocs_.end()) {
      a.create_index = index;
      if (a.create_time == 0)
        a.create_time = now;
    } else {
      // The client owns these; a plan computed from an older snapshot must not roll back
      // what the client reported meanwhile. Except the servers' verdicts on them: an
      // allocation whose node went down is lost, and one whose node is disconnected
      // (still, as this write is applied) is unknown.
      const model::Allocation& stored = *it->second;
      a.create_index = stored.create_index;
      a.create_time = stored.create_time;
      const bool unknown = a.client_status == model::kClientUnknown &&
                           stored.client_status != model::kClientUnknown &&
                           NodeDisconnected(a.node_id);
      if (a.client_status != model::kClientLost && !unknown) {
        a.client_status = stored.client_status;
        a.client_description = stored.client_description;
      }
      a.task_states = stored.task_states;
      // Moved into another deployment (an in-place update): its health there is the
      // scheduler's (none yet); otherwise the client's report stands.
      // The canary mark stays the servers' (promotion clears it).
      if (a.deployment_id == stored.deployment_id) {
        const bool canary = a.deployment_status && a.deployment_status->canary;
        a.deployment_status = stored.deployment_status;
        if (a.deployment_status)
          a.deployment_status->canary = canary;
      }
    }
    const bool tracked = TrackDeploymentAlloc(it == allocs_.end() ? nullptr : it->second.get(), a);
    deployments_changed = deployments_changed || tracked;
    a.modify_index = index;
    a.alloc_modify_index = index;
    a.modify_time = now;
    jobs.emplace(a.namespace_, a.job_id);
    const std::string id = a.id;  // the right side is evaluated (and moved) first
    allocs_by_job_[JobKey(a.namespace_, a.job_id)].insert(id);
    allocs_by_node_[a.node_id].insert(id);
    NodeAllocsChanged(a.node_id, index);
    allocs_[id] = std::make_shared<const model::Allocation>(std::move(a));
    Save(allocs_[id]);
  }
  for (const auto& [ns, job] : jobs)
    RefreshJobStatus(ns, job);
  DeploymentsChanged(deployments_changed, index);
}

bool StateStore::NodeDisconnected(const std::string& node_id) const {
  NodePtr n = GetNode(node_id);
  return n && n->status == model::kNodeStatusDisconnected;
}

std::vector<std::string> StateStore::UpdateAllocsFromClient(
    const std::vector<model::AllocClientUpdate>& updates) {
  std::vector<std::string> unknown;
  if (updates.empty()) {
    return unknown;
  }
  const uint64_t index = Bump(Table::kAllocs);
  const int64_t now = common::ToUnixNanos(clock_.Now());
  // Each job once: its status is refreshed from all of its allocations.
  std::set<std::pair<std::string, std::string>> jobs;
  bool deployments_changed = false;
  for (const model::AllocClientUpdate& u : updates) {
    auto it = allocs_.find(u.id);
    if (it == allocs_.end()) {
      unknown.push_back(u.id);
      continue;
    }
    auto a = std::make_shared<model::Allocation>(*it->second);
    a->task_states = u.task_states;
    // Lost is the servers' verdict (the node went down and the allocation was
    // replaced): what the node says once it is back does not undo it.
    if (a->client_status != model::kClientLost) {
      a->client_status = u.client_status;
      a->client_description = u.client_description;
    }
    // A health verdict for the deployment the allocation is in (a client still judging
    // an earlier one does not overwrite it). The canary mark is the servers'.
    if (u.deployment_status && u.deployment_id == a->deployment_id) {
      const bool canary = a->deployment_status && a->deployment_status->canary;
      a->deployment_status = u.deployment_status;
      a->deployment_status->canary = canary;
    }
    deployments_changed = TrackDeploymentAlloc(it->second.get(), *a) || deployments_changed;
    a->modify_index = index;
    a->modify_time = now;
    jobs.emplace(a->namespace_, a->job_id);
    it->second = std::move(a);
    Save(it->second);
  }
  for (const auto& [ns, job] : jobs)
    RefreshJobStatus(ns, job);
  DeploymentsChanged(deployments_changed, index);
  return unknown;
}

AllocPtr StateStore::GetAlloc(const std::string& id) const {
  auto it = allocs_.find(id);
  return it == allocs_.end() ? nullptr : it->second;
}

std::vector<AllocPtr> StateStore::ListAllocs(const std::string& ns,
                                             const std::string& prefix) const {
  std::vector<AllocPtr> out;
  for (const auto& [id, a] : allocs_) {
    if (NamespaceMatches(ns, a->namespace_) && HasPrefix(id, prefix))
      out.push_back(a);
  }
  return out;
}

std::vector<AllocPtr> StateStore::AllocsByJob(const std::string& ns,
                                              const std::string& job_id) const {
  std::vector<AllocPtr> out;
  if (auto it = allocs_by_job_.find(JobKey(ns, job_id)); it != allocs_by_job_.end()) {
    for (const std::string& id : it->second)
      out.push_back(allocs_.at(id));
  }
  return out;
}

std::vector<AllocPtr> StateStore::AllocsByNode(const std::string& node_id) const {
  std::vector<AllocPtr> out;
  if (auto it = allocs_by_node_.find(node_id); it != allocs_by_node_.end()) {
    for (const std::string& id : it->second)
      out.push_back(allocs_.at(id));
  }
  return out;
}

std::vector<AllocPtr> StateStore::AllocsByEval(const std::string& eval_id) const {
  std::vector<AllocPtr> out;
  for (const auto& [id, a] : allocs_) {
    if (a->eval_id == eval_id)
      out.push_back(a);
  }
  return out;
}

NodePtr StateStore::UpsertNode(model::Node node) {
  const uint64_t index = Bump(Table::kNodes);
  auto it = nodes_.find(node.id);
  node.create_index = it == nodes_.end() ? index : it->second->create_index;
  node.modify_index = index;
  for (model::NodeEvent& e : node.events) {
    if (e.create_index == 0)
      e.create_index = index;
  }
  auto stored = std::make_shared<const model::Node>(std::move(node));
  nodes_[stored->id] = stored;
  Save(stored);
  return stored;
}

NodePtr StateStore::GetNode(const std::string& id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second;
}

std::vector<NodePtr> StateStore::ListNodes(const std::string& prefix) const {
  std::vector<NodePtr> out;
  for (const auto& [id, n] : nodes_) {
    if (HasPrefix(id, prefix))
      out.push_back(n);
  }
  return out;
}

void StateStore::RefreshJobStatus(const std::string& ns, const std::string& job_id) {
  auto it = jobs_.find(JobKey(ns, job_id));
  if (it == jobs_.end()) {
    return;
  }
  const model::Job& job = *it->second;
  std::string status;
  // Templates run nothing themselves: running until stopped (Nomad's getJobStatus).
  if (job.IsPeriodic() || job.IsParameterized())
    status = job.stop ? model::kJobStatusDead : model::kJobStatusRunning;
  bool has_alloc = false;
  bool has_eval = false;
  // Walks the index rather than copying the job's allocations: this runs on every
  // write to them.
  if (auto ids = allocs_by_job_.find(it->first); status.empty() && ids != allocs_by_job_.end()) {
    for (const std::string& id : ids->second) {
      has_alloc = true;
      if (!allocs_.at(id)->Terminal()) {
        status = model::kJobStatusRunning;
        break;
      }
    }
  }
  if (status.empty()) {
    for (const EvalPtr& e : EvalsByJob(ns, job_id)) {
      has_eval = true;
      if (!EvalTerminal(*e)) {
        status = model::kJobStatusPending;
        break;
      }
    }
  }
  if (status.empty()) {
    status = (job.stop || has_eval || has_alloc) ? model::kJobStatusDead : model::kJobStatusPending;
  }
  if (status != job.status) {
    auto updated = std::make_shared<model::Job>(job);
    updated->status = status;
    updated->modify_index = Bump(Table::kJobs);
    it->second = updated;
    Save(it->second);
    auto& versions = job_versions_[it->first];
    if (!versions.empty() && versions.front()->version == updated->version) {
      versions.front() = it->second;
    }
  }
}

}  // namespace drover::server
