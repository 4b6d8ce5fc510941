// The scheduler configuration (Nomad's SchedulerConfiguration) and deleting evaluations,
// which it gates (PauseEvalBroker).
#include <set>

#include "common/logging.h"
#include "server/server.h"

namespace drover::server {
namespace {

// Nomad's rule for an evaluation a user may delete: nothing placed from it may still
// need it. An allocation that runs (or may, unknown) needs it, and so does a failed
// one that may yet be rescheduled: its replacement is placed from its evaluation.
bool EvalDeleteSafe(const StateStore& state, const model::Evaluation& eval) {
  const JobPtr job = state.GetJob(eval.namespace_, eval.job_id);
  if (!job || job->stop || job->status == model::kJobStatusDead)
    return true;
  for (const AllocPtr& a : state.AllocsByEval(eval.id)) {
    if (a->client_status == model::kClientRunning || a->client_status == model::kClientUnknown)
      return false;
    if (a->client_status != model::kClientFailed)
      continue;
    const model::TaskGroup* g = job->FindGroup(a->task_group);
    const std::optional<model::ReschedulePolicy>& policy =
        g != nullptr ? g->reschedule_policy : std::nullopt;
    if (!policy || (!policy->unlimited && policy->attempts == 0))
      continue;
    if (a->next_allocation.empty() || policy->unlimited)
      return false;
    if (!a->reschedule_tracker || a->reschedule_tracker->events.empty())
      return false;
  }
  return true;
}

}  // namespace

model::SchedulerConfig Server::SchedulerConfiguration() const {
  if (const auto& stored = state_.scheduler_config())
    return *stored;
  model::SchedulerConfig defaults;
  defaults.memory_oversubscription = config_.memory_oversubscription;
  return defaults;
}

asio::awaitable<absl::StatusOr<Server::SchedulerConfigUpdate>> Server::SetSchedulerConfigDurably(
    model::SchedulerConfig config, std::optional<uint64_t> cas) {
  auto guard = co_await durable_writes_.Lock();
  if (!leader_)
    co_return NotLeaderError();
  const std::optional<model::SchedulerConfig> before = state_.scheduler_config();
  if (cas && *cas != (before ? before->modify_index : 0))
    co_return SchedulerConfigUpdate{.updated = false, .index = state_.LatestIndex()};
  const model::SchedulerConfig stored = state_.SetSchedulerConfig(std::move(config));
  if (absl::Status s = co_await state_.Flush(); !s.ok()) {
    state_.RestoreSchedulerConfig(before);
    queue_changed_.Notify();  // what waited on the refused value looks again
    co_return s;
  }
  DROVER_LOG_INFO("server: scheduler configuration set: eval broker {}, memory oversubscription {}",
                  stored.pause_eval_broker ? "paused" : "running",
                  stored.memory_oversubscription ? "on" : "off");
  queue_changed_.Notify();  // a paused worker looks again
  co_return SchedulerConfigUpdate{.updated = true, .index = stored.modify_index};
}

asio::awaitable<absl::StatusOr<uint64_t>> Server::DeleteEvalsDurably(std::vector<std::string> ids) {
  // One durable write at a time: what goes must not race a write that is undone.
  auto guard = co_await durable_writes_.Lock();
  if (!leader_)
    co_return NotLeaderError();
  if (!SchedulerConfiguration().pause_eval_broker) {
    co_return absl::FailedPreconditionError(
        "eval broker is enabled; eval broker must be paused to delete evals");
  }
  const std::set<std::string> unique(ids.begin(), ids.end());
  for (const std::string& id : unique) {
    const EvalPtr eval = state_.GetEval(id);
    if (!eval)
      co_return absl::NotFoundError("eval not found");
    if (!EvalDeleteSafe(state_, *eval))
      co_return absl::FailedPreconditionError("eval " + id + " is not safe to delete");
  }
  StateStore::Removal removal;
  removal.evals.assign(unique.begin(), unique.end());
  state_.Remove(removal);
  // As a garbage collection's: nothing to undo when this fails (what went is gone from
  // memory; a record left on disk comes back after a restart).
  if (absl::Status s = co_await state_.Flush(); !s.ok())
    co_return s;
  for (const std::string& id : removal.evals)
    queued_.erase(id);  // the worker skips what it no longer finds
  DROVER_LOG_INFO("server: deleted {} evaluations", removal.evals.size());
  co_return state_.LatestIndex();
}

}  // namespace drover::server
