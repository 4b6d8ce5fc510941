// The server's job-version calls: stability, revert, evaluate and plan.
#include <algorithm>

#include "codec/job_diff.h"
#include "common/ids.h"
#include "common/offload.h"
#include "server/plan_annotate.h"
#include "server/scheduler.h"
#include "server/server.h"

namespace drover::server {

asio::awaitable<absl::StatusOr<uint64_t>> Server::SetJobStabilityDurably(std::string ns,
                                                                         std::string id,
                                                                         uint64_t version,
                                                                         bool stable) {
  StateStore::JobSnapshot before;
  uint64_t index = 0;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    before = state_.SnapshotJob(ns, id);
    absl::StatusOr<JobPtr> updated = state_.SetJobStability(ns, id, version, stable);
    if (!updated.ok()) {
      return absl::FailedPreconditionError("job \"" + id + "\" in namespace \"" + ns +
                                           "\" at version " + std::to_string(version) +
                                           " not found");
    }
    index = (*updated)->modify_index;
    return EvalResponse{};
  };
  std::function<void()> undo = [&] { state_.RestoreJob(before); };
  absl::StatusOr<EvalResponse> done = co_await Durably(write, undo);
  if (!done.ok())
    co_return done.status();
  co_return index;
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::RevertJobDurably(
    std::string ns, std::string id, uint64_t version,
    std::optional<uint64_t> enforce_prior_version) {
  StateStore::JobSnapshot before;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    before = state_.SnapshotJob(ns, id);
    const JobPtr current = before.job;
    if (!current)
      return absl::NotFoundError("job not found");
    // Nomad's checks, in its order (EnforcePriorVersion last).
    if (version == current->version)
      return absl::FailedPreconditionError("can't revert to current version");
    auto kept = std::find_if(before.versions.begin(), before.versions.end(),
                             [&](const JobPtr& j) { return j->version == version; });
    if (kept == before.versions.end()) {
      return absl::FailedPreconditionError("job \"" + id + "\" in namespace \"" + ns +
                                           "\" at version " + std::to_string(version) +
                                           " not found");
    }
    if (enforce_prior_version && *enforce_prior_version != current->version) {
      return absl::FailedPreconditionError(
          "Current job has version " + std::to_string(current->version) + "; enforcing version " +
          std::to_string(*enforce_prior_version));
    }
    // Canonicalized and validated when it was registered; checked again all the same,
    // as any registration is (the rules may have changed since).
    return RegisterJob(model::Job(**kept));
  };
  std::function<void()> undo = [&] { state_.RestoreJob(before); };
  co_return co_await Durably(write, undo);
}

asio::awaitable<absl::StatusOr<EvalResponse>> Server::EvaluateJobDurably(std::string ns,
                                                                         std::string id,
                                                                         bool force_reschedule) {
  std::vector<AllocPtr> allocs_before;
  std::vector<AllocPtr> allocs_after;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    const JobPtr job = state_.GetJob(ns, id);
    if (!job)
      return absl::NotFoundError("job not found");
    if (job->IsPeriodic())
      return absl::FailedPreconditionError("can't evaluate periodic job");
    if (job->IsParameterized())
      return absl::FailedPreconditionError("can't evaluate parameterized job");
    if (force_reschedule) {
      std::vector<model::Allocation> marked;
      for (const AllocPtr& a : state_.AllocsByJob(ns, id)) {
        const model::TaskGroup* g = job->FindGroup(a->task_group);
        const bool may_reschedule =
            g != nullptr && g->reschedule_policy &&
            (g->reschedule_policy->attempts > 0 || g->reschedule_policy->unlimited);
        if (!may_reschedule || a->desired_status != model::kDesiredRun ||
            a->client_status != model::kClientFailed || !a->next_allocation.empty() ||
            a->desired_transition.force_reschedule.value_or(false))
          continue;
        allocs_before.push_back(a);
        model::Allocation copy = *a;
        copy.desired_transition.force_reschedule = true;
        marked.push_back(std::move(copy));
      }
      if (!marked.empty())
        state_.UpsertAllocs(std::move(marked));
      for (const AllocPtr& a : allocs_before)
        allocs_after.push_back(state_.GetAlloc(a->id));
    }
    return CreateEval(*job, model::kTriggerJobRegister);
  };
  std::function<void()> undo = [&] { state_.RestoreAllocs(allocs_before, allocs_after); };
  co_return co_await Durably(write, undo);
}

asio::awaitable<absl::StatusOr<model::JobPlan>> Server::PlanJob(PreparedJob job, bool diff) {
  // Held to the end: the state is read once the plan's turn comes.
  auto one_at_a_time = co_await plans_.Lock();
  absl::StatusOr<std::vector<std::string>> warnings = CheckRegistration(job.job());
  if (!warnings.ok())
    co_return warnings.status();
  auto proposed = std::make_shared<const model::Job>(state_.PreviewJob(std::move(job).Release()));
  model::Evaluation eval;
  eval.id = common::NewUuid();
  eval.namespace_ = proposed->namespace_;
  eval.priority = proposed->priority;
  eval.type = proposed->type;
  eval.triggered_by = model::kTriggerJobRegister;
  eval.job_id = proposed->id;
  eval.job_modify_index = proposed->job_modify_index;
  eval.status = model::kEvalPending;
  const JobPtr current = state_.GetJob(proposed->namespace_, proposed->id);
  model::JobPlan out;
  out.job_modify_index = current ? current->job_modify_index : 0;
  out.warnings = *std::move(warnings);
  out.index = state_.LatestIndex();
  if (proposed->IsPeriodicActive())
    out.next_periodic_launch = NextPeriodicLaunch(*proposed->periodic, clock_.Now());
  // The scheduler and the diff both run on the pool: a large job or cluster never
  // holds the control loop.
  auto work = [input = MakeSchedulerInput(eval, proposed), current, proposed, diff,
               out = std::move(out)]() mutable {
    PlanResult result = Schedule(input);
    out.desired_tg_updates = std::move(result.desired_tg_updates);
    out.failed_tg_allocs = std::move(result.failed_tg_allocs);
    if (diff) {
      out.diff = codec::DiffJobs(current.get(), proposed.get(), /*contextual=*/true);
      AnnotateDiff(*out.diff, out.desired_tg_updates);
    }
    return out;
  };
  try {
    co_return co_await common::Offload(pool_, std::move(work));
  } catch (const std::exception& e) {
    co_return absl::InternalError(std::string("scheduler failed: ") + e.what());
  }
}

}  // namespace drover::server
