#include "server/rollout.h"

#include <algorithm>

#include "common/ids.h"

namespace drover::server {

namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Rollout::Rollout(const SchedulerInput& in, PlanResult& plan) : in_(in), plan_(plan) {
  const DeploymentPtr d = in.deployments.empty() ? nullptr : in.deployments.front();
  if (!d)
    return;
  auto cancel = [&](const char* why) {
    if (d->Active())
      plan_.deployment_updates.push_back({d->id, model::kDeploymentCancelled, why});
  };
  if (!in.job || in.job->stop) {
    cancel(model::kDeploymentDescStoppedJob);
    return;
  }
  if (d->job_create_index != in.job->create_index || d->job_version != in.job->version) {
    cancel(model::kDeploymentDescNewerJob);
    return;
  }
  if (d->status == model::kDeploymentSuccessful || d->status == model::kDeploymentCancelled)
    return;
  deployment_ = *d;
}

bool Rollout::Rolling(const model::TaskGroup& g) const {
  return in_.job && in_.job->type == model::kJobTypeService && g.Rolling();
}

const model::DeploymentState* Rollout::GroupState(const std::string& group) const {
  if (!deployment_)
    return nullptr;
  auto it = deployment_->task_groups.find(group);
  return it == deployment_->task_groups.end() ? nullptr : &it->second;
}

bool Rollout::StaleCanary(const model::Allocation& a) const {
  if (a.deployment_id.empty())
    return false;
  if (Active() && a.deployment_id == deployment_->id)
    return false;
  for (const DeploymentPtr& d : in_.deployments) {
    if (d->id != a.deployment_id)
      continue;
    auto g = d->task_groups.find(a.task_group);
    return g != d->task_groups.end() && !g->second.promoted &&
           Contains(g->second.placed_canaries, a.id);
  }
  return false;
}

bool Rollout::CurrentCanary(const model::Allocation& a) const {
  const model::DeploymentState* s = GroupState(a.task_group);
  return s != nullptr && a.deployment_id == deployment_->id && Contains(s->placed_canaries, a.id);
}

bool Rollout::PendingCanary(const model::Allocation& a) const {
  return Active() && CurrentCanary(a) && !GroupState(a.task_group)->promoted;
}

bool Rollout::MayReschedule(const model::Allocation& a) const {
  const bool in_deployment = deployment_ && a.deployment_id == deployment_->id;
  const model::DeploymentState* s = in_deployment ? GroupState(a.task_group) : nullptr;
  const bool progress_based = s != nullptr && s->progress_deadline != common::Duration{0};
  if (!a.ClientTerminal()) {
    const bool unhealthy = a.deployment_status && a.deployment_status->healthy == false;
    return Active() && progress_based && unhealthy &&
           a.desired_transition.reschedule.value_or(false);
  }
  if (a.client_status != model::kClientFailed)
    return false;
  if (!in_deployment)
    return true;
  if (deployment_->status == model::kDeploymentFailed)
    return false;
  return !Active() || progress_based;
}

int Rollout::CanariesWanted(const model::TaskGroup& g, int destructive, int existing) const {
  if (!Rolling(g) || g.update->canary <= 0 || destructive == 0)
    return 0;
  if (deployment_ && (!Active() || deployment_->status == model::kDeploymentPaused))
    return 0;
  if (const model::DeploymentState* s = GroupState(g.name); s != nullptr && s->promoted)
    return 0;
  return std::max(0, g.update->canary - existing);
}

bool Rollout::Canarying(const model::TaskGroup& g) const {
  const model::DeploymentState* s = GroupState(g.name);
  return s != nullptr && s->desired_canaries > 0 && !s->promoted;
}

int Rollout::DestructiveLimit(const model::TaskGroup& g, const std::vector<AllocPtr>& live) const {
  if (!Rolling(g))
    return g.count;
  if (deployment_ && (!Active() || deployment_->status == model::kDeploymentPaused))
    return 0;
  if (Canarying(g))
    return 0;
  int limit = g.update->max_parallel;
  if (Active()) {
    for (const AllocPtr& a : live) {
      // One already replaced (rescheduled) no longer holds its slot.
      if (a->deployment_id != deployment_->id || a->ServerTerminal() || !a->next_allocation.empty())
        continue;
      const std::optional<bool> healthy =
          a->deployment_status ? a->deployment_status->healthy : std::nullopt;
      if (healthy == false)
        return 0;  // an unhealthy allocation stops the rollout
      if (!healthy)
        --limit;
    }
  }
  return std::max(limit, 0);
}

bool Rollout::PlacementsBlocked(const model::TaskGroup& g) const {
  if (!Rolling(g) || !deployment_)
    return false;
  return !Active() || deployment_->status == model::kDeploymentPaused || Canarying(g);
}

std::string Rollout::AttachGroup(const model::TaskGroup& g, const GroupOutcome& o) {
  if (!Rolling(g))
    return "";
  if (!deployment_) {
    if (g.count == 0 || (o.had_running && !o.updating_spec))
      return "";
    const model::Job& job = *in_.job;
    model::Deployment d;
    d.id = common::NewUuid();
    d.namespace_ = job.namespace_;
    d.job_id = job.id;
    d.job_version = job.version;
    d.job_modify_index = job.job_modify_index;
    d.job_spec_modify_index = job.job_modify_index;
    d.job_create_index = job.create_index;
    d.status = model::kDeploymentRunning;
    d.status_description = model::kDeploymentDescRunning;
    d.eval_priority = in_.eval.priority;
    deployment_ = std::move(d);
    created_ = true;
  }
  if (!Active())
    return "";
  auto [it, added] = deployment_->task_groups.try_emplace(g.name);
  model::DeploymentState& s = it->second;
  const model::DeploymentState before = s;
  if (added) {
    s.auto_revert = g.update->auto_revert;
    s.auto_promote = g.update->auto_promote;
    s.progress_deadline = g.update->progress_deadline;
  }
  s.desired_total = g.count;
  if (o.canaries_wanted > 0)
    s.desired_canaries = g.update->canary;
  changed_ = changed_ || added || !(s == before);
  complete_[g.name] = o.pending == 0 && s.Done();
  return deployment_->id;
}

void Rollout::Finish() {
  if (!Active())
    return;
  plan_.deployment_id = deployment_->id;
  std::string description = deployment_->status_description;
  std::string status = deployment_->status;
  if (deployment_->status == model::kDeploymentRunning) {
    const bool complete = !deployment_->task_groups.empty() &&
                          std::all_of(deployment_->task_groups.begin(),
                                      deployment_->task_groups.end(), [&](const auto& g) {
                                        auto it = complete_.find(g.first);
                                        return it != complete_.end() && it->second;
                                      });
    if (complete && !created_) {
      status = model::kDeploymentSuccessful;
      description = model::kDeploymentDescSuccessful;
    } else if (deployment_->RequiresPromotion()) {
      description = deployment_->HasAutoPromote() ? model::kDeploymentDescRunningAutoPromotion
                                                  : model::kDeploymentDescRunningNeedsPromotion;
    }
  }
  if (created_) {
    deployment_->status_description = description;
    plan_.deployment = *deployment_;
    return;
  }
  if (changed_)
    plan_.deployment = *deployment_;
  if (status != deployment_->status || description != deployment_->status_description)
    plan_.deployment_updates.push_back({deployment_->id, status, description});
}

}  // namespace drover::server
