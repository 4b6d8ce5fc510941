// The server's side of deployments: applying what the scheduler decided (rollout.h),
// the deployment watcher (health, progress deadlines, auto-promotion, auto-revert),
// and the writes that fail and promote deployments.
#include <algorithm>
#include <set>

#include "common/ids.h"
#include "common/logging.h"
#include "server/scheduler.h"
#include "server/server.h"

namespace drover::server {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// Past its progress deadline without the progress it needed: a group waiting for
// manual promotion with healthy canaries is not.
bool GroupMissedDeadline(const model::DeploymentState& s, common::Time now) {
  if (s.require_progress_by == common::Time{} || now < s.require_progress_by)
    return false;
  if (s.desired_canaries > 0 && !s.promoted)
    return s.healthy_allocs < s.desired_canaries;
  return s.healthy_allocs < s.desired_total;
}

int HealthyAllocs(const model::Deployment& d) {
  int n = 0;
  for (const auto& [name, s] : d.task_groups)
    n += s.healthy_allocs;
  return n;
}

}  // namespace

void Server::ApplyPlanDeployments(const PlanResult& plan) {
  if (plan.deployment) {
    const model::Deployment& planned = *plan.deployment;
    const DeploymentPtr stored = state_.GetDeployment(planned.id);
    if (!stored) {
      state_.UpsertDeployment(planned);
    } else if (stored->Active()) {
      // The counters are the state's (clients report health meanwhile): only what the
      // scheduler decides is taken, group by group.
      model::Deployment merged = *stored;
      for (const auto& [name, s] : planned.task_groups) {
        auto [it, added] = merged.task_groups.try_emplace(name, s);
        if (!added) {
          it->second.desired_total = s.desired_total;
          it->second.desired_canaries = s.desired_canaries;
        }
      }
      if (!(merged == *stored))
        state_.UpsertDeployment(std::move(merged));
    }
  }
  for (const PlanResult::DeploymentUpdate& u : plan.deployment_updates)
    SetDeploymentStatus(u.id, u.status, u.description);
}

model::DeploymentPtr Server::SetDeploymentStatus(const std::string& id, const std::string& status,
                                                 const std::string& description) {
  const DeploymentPtr stored = state_.GetDeployment(id);
  if (!stored || !stored->Active())
    return stored;
  model::Deployment d = *stored;
  d.status = status;
  d.status_description = description;
  DeploymentPtr updated = state_.UpsertDeployment(std::move(d));
  if (status == model::kDeploymentSuccessful) {
    // What rolled out is a version to go back to (auto-revert).
    (void)state_.SetJobStability(updated->namespace_, updated->job_id, updated->job_version, true);
  }
  if (!updated->Active())
    deployment_healthy_seen_.erase(id);
  return updated;
}

EvalResponse Server::CreateDeploymentEval(const model::Deployment& d) {
  const JobPtr job = state_.GetJob(d.namespace_, d.job_id);
  model::Job stub;
  if (job) {
    stub = *job;
  } else {
    stub.namespace_ = d.namespace_;
    stub.id = d.job_id;
    stub.type = model::kJobTypeService;
  }
  if (d.eval_priority > 0)
    stub.priority = d.eval_priority;
  return CreateEval(stub, model::kTriggerDeploymentWatcher, d.id);
}

absl::StatusOr<Server::DeploymentUpdateResponse> Server::FailDeployment(const model::Deployment& d,
                                                                        std::string description,
                                                                        bool rollback) {
  const bool auto_revert = std::any_of(d.task_groups.begin(), d.task_groups.end(),
                                       [](const auto& g) { return g.second.auto_revert; });
  DeploymentUpdateResponse out;
  JobPtr target;
  const JobPtr current = state_.GetJob(d.namespace_, d.job_id);
  if (rollback && auto_revert && current) {
    // The latest stable version (it may be this one: then there is nothing to undo).
    for (const JobPtr& v : state_.JobVersions(d.namespace_, d.job_id)) {
      if (v->stable) {
        target = v;
        break;
      }
    }
    if (!target) {
      description += " - no stable job version to auto revert to";
    } else if (!current->stop && target->version != current->version) {
      if (!JobSpecChanged(*target, *current)) {
        description += " - not rolling back to stable job version " +
                       std::to_string(target->version) + " as current job has same specification";
        target.reset();
      } else {
        description += " - rolling back to job version " + std::to_string(target->version);
      }
    } else {
      target.reset();
    }
  }
  DeploymentPtr failed = SetDeploymentStatus(d.id, model::kDeploymentFailed, description);
  // A version whose rollout failed is not one to go back to.
  (void)state_.SetJobStability(d.namespace_, d.job_id, d.job_version, false);
  if (target) {
    absl::StatusOr<EvalResponse> reverted = RegisterJob(model::Job(*target));
    if (!reverted.ok())
      return reverted.status();
    out.reverted_job_version = target->version;
    out.eval_id = reverted->eval_id;
    out.eval_create_index = reverted->eval_create_index;
  } else {
    EvalResponse e = CreateDeploymentEval(d);
    out.eval_id = e.eval_id;
    out.eval_create_index = e.eval_create_index;
  }
  out.deployment_modify_index = failed ? failed->modify_index : 0;
  out.index = state_.LatestIndex();
  DROVER_LOG_INFO("deployment {} of job {} failed: {}", d.id, d.job_id, description);
  return out;
}

absl::StatusOr<Server::DeploymentUpdateResponse> Server::PromoteDeployment(
    const model::Deployment& d, const std::vector<std::string>& groups) {
  auto selected = [&](const std::string& name) {
    return groups.empty() || std::find(groups.begin(), groups.end(), name) != groups.end();
  };
  for (const std::string& g : groups) {
    if (!d.task_groups.contains(g))
      return absl::FailedPreconditionError("deployment has no task group \"" + g + "\"");
  }
  bool have_canaries = false;
  std::string unhealthy;
  for (const auto& [name, s] : d.task_groups) {
    if (!selected(name) || s.desired_canaries == 0)
      continue;
    have_canaries = true;
    int healthy = 0;
    for (const std::string& id : s.placed_canaries) {
      const AllocPtr a = state_.GetAlloc(id);
      if (a && !a->Terminal() && a->deployment_status && a->deployment_status->healthy == true)
        ++healthy;
    }
    if (healthy < s.desired_canaries) {
      unhealthy += (unhealthy.empty() ? "" : "\n") +
                   ("Task group \"" + name + "\" has " + std::to_string(healthy) + "/" +
                    std::to_string(s.desired_canaries) + " healthy allocations");
    }
  }
  if (!have_canaries)
    return absl::FailedPreconditionError("no canaries to promote");
  if (!unhealthy.empty())
    return absl::FailedPreconditionError(unhealthy);
  model::Deployment promoted = d;
  const common::Time now = clock_.Now();
  std::vector<model::Allocation> unmarked;
  for (auto& [name, s] : promoted.task_groups) {
    if (!selected(name))
      continue;
    s.promoted = true;
    if (s.require_progress_by != common::Time{} && s.progress_deadline > common::Duration::zero())
      s.require_progress_by = now + s.progress_deadline;
    // Promoted canaries are the group's allocations now.
    for (const std::string& id : s.placed_canaries) {
      const AllocPtr a = state_.GetAlloc(id);
      if (a && a->deployment_status && a->deployment_status->canary) {
        model::Allocation copy = *a;
        copy.deployment_status->canary = false;
        unmarked.push_back(std::move(copy));
      }
    }
  }
  if (!promoted.RequiresPromotion() && promoted.status == model::kDeploymentRunning)
    promoted.status_description = model::kDeploymentDescRunning;
  DeploymentPtr stored = state_.UpsertDeployment(std::move(promoted));
  if (!unmarked.empty())
    state_.UpsertAllocs(std::move(unmarked));
  EvalResponse e = CreateDeploymentEval(*stored);
  return DeploymentUpdateResponse{.eval_id = e.eval_id,
                                  .eval_create_index = e.eval_create_index,
                                  .deployment_modify_index = stored->modify_index,
                                  .index = state_.LatestIndex()};
}

void Server::MarkUnhealthyForReplacement(const model::Deployment& d, const model::Job& job) {
  std::vector<model::Allocation> marked;
  for (const AllocPtr& a : state_.AllocsByJob(d.namespace_, d.job_id)) {
    auto s = d.task_groups.find(a->task_group);
    if (a->deployment_id != d.id || s == d.task_groups.end() ||
        s->second.progress_deadline == common::Duration{0} ||
        a->desired_status != model::kDesiredRun || a->ClientTerminal() || !a->deployment_status ||
        a->deployment_status->healthy != false || a->deployment_status->canary ||
        a->desired_transition.reschedule.value_or(false))
      continue;
    model::Allocation copy = *a;
    copy.desired_transition.reschedule = true;
    marked.push_back(std::move(copy));
  }
  if (marked.empty())
    return;
  DROVER_LOG_INFO("deployment {}: {} unhealthy allocation(s) to replace", d.id, marked.size());
  state_.UpsertAllocs(std::move(marked));
  if (!HasQueuedEval(job))
    CreateDeploymentEval(d);
}

std::optional<common::Time> Server::DeploymentPass() {
  std::optional<common::Time> next;
  const common::Time now = clock_.Now();
  std::set<std::string> running;
  for (const DeploymentPtr& d : state_.RunningDeployments()) {
    running.insert(d->id);
    const JobPtr job = state_.GetJob(d->namespace_, d->job_id);
    if (!job || job->version != d->job_version || job->create_index != d->job_create_index)
      continue;  // the scheduler cancels it
    // Nomad's rule: a group without a progress deadline fails on its first unhealthy
    // allocation; in one with a deadline, unhealthy allocations are replaced as their
    // reschedule policy allows, and only the deadline fails it.
    const bool unhealthy =
        std::any_of(d->task_groups.begin(), d->task_groups.end(), [](const auto& g) {
          return g.second.unhealthy_allocs > 0 && g.second.progress_deadline == common::Duration{0};
        });
    const bool missed =
        std::any_of(d->task_groups.begin(), d->task_groups.end(),
                    [&](const auto& g) { return GroupMissedDeadline(g.second, now); });
    if (unhealthy || missed) {
      absl::StatusOr<DeploymentUpdateResponse> r = FailDeployment(
          *d,
          missed ? model::kDeploymentDescProgressDeadline : model::kDeploymentDescFailedAllocations,
          /*rollback=*/true);
      if (!r.ok())
        DROVER_LOG_ERROR("deployment {}: could not fail it: {}", d->id, r.status().ToString());
      continue;
    }
    for (const auto& [name, s] : d->task_groups) {
      if (!s.Done() && s.require_progress_by != common::Time{})
        next = next ? std::min(*next, s.require_progress_by) : s.require_progress_by;
    }
    const bool replaceable =
        std::any_of(d->task_groups.begin(), d->task_groups.end(), [](const auto& g) {
          return g.second.unhealthy_allocs > 0 && g.second.progress_deadline != common::Duration{0};
        });
    if (replaceable)
      MarkUnhealthyForReplacement(*d, *job);
    if (d->RequiresPromotion() && d->HasAutoPromote()) {
      const bool ready =
          std::all_of(d->task_groups.begin(), d->task_groups.end(), [](const auto& g) {
            const model::DeploymentState& s = g.second;
            return s.desired_canaries == 0 ||
                   (static_cast<int>(s.placed_canaries.size()) >= s.desired_canaries &&
                    s.healthy_allocs >= s.desired_canaries);
          });
      if (ready) {
        if (absl::StatusOr<DeploymentUpdateResponse> r = PromoteDeployment(*d, {}); !r.ok())
          DROVER_LOG_DEBUG("deployment {}: not promoted yet: {}", d->id, r.status().ToString());
        continue;
      }
    }
    // More healthy allocations: the scheduler goes on with the rollout (or finds it done).
    const int healthy = HealthyAllocs(*d);
    auto [seen, added] = deployment_healthy_seen_.try_emplace(d->id, 0);
    if (seen->second != healthy) {
      seen->second = healthy;
      if (!HasQueuedEval(*job))
        CreateDeploymentEval(*d);
    }
  }
  // Deployments that ended without a status change (their job purged) are forgotten.
  std::erase_if(deployment_healthy_seen_,
                [&](const auto& entry) { return !running.contains(entry.first); });
  return next;
}

asio::awaitable<void> Server::DeploymentLoop(common::CancellationScopePtr term) {
  while (!term->cancelled()) {
    std::optional<common::Time> next;
    {
      // Not while a durable write may yet be undone (as the evaluation worker).
      auto guard = co_await durable_writes_.Lock();
      if (term->cancelled())
        break;
      next = DeploymentPass();
    }
    const uint64_t index = state_.LatestIndex();
    const common::Duration wait =
        next ? std::clamp<common::Duration>(*next - clock_.Now(), common::Duration::zero(),
                                            std::chrono::hours(1))
             : std::chrono::hours(1);
    std::vector<Table> tables{Table::kDeployments, Table::kJobs};
    auto changed = state_.BlockUntil(tables, index, wait);
    auto stopped = term->Wait();
    co_await (std::move(changed) || std::move(stopped));
  }
}

}  // namespace drover::server
