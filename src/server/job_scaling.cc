// Scaling a job's group through the API (Nomad's Job.Scale).
#include <limits>

#include "codec/prepared_job.h"
#include "server/server.h"

namespace drover::server {

asio::awaitable<absl::StatusOr<EvalResponse>> Server::ScaleJobDurably(ScaleRequest request) {
  StateStore::JobSnapshot before;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    before = state_.SnapshotJob(request.ns, request.job_id);
    if (!before.job)
      return absl::NotFoundError("job \"" + request.job_id + "\" not found");
    const model::Job& current = *before.job;
    const model::TaskGroup* group = current.FindGroup(request.group);
    if (group == nullptr) {
      return absl::InvalidArgumentError("task group \"" + request.group +
                                        "\" specified for scaling does not exist in job");
    }
    if (request.count && *request.count < 0)
      return absl::InvalidArgumentError("scaling action count can't be negative");
    if (request.count && request.error)
      return absl::InvalidArgumentError("scaling action should not contain count if error is true");
    if (request.count && group->scaling) {
      if (*request.count < group->scaling->min) {
        return absl::InvalidArgumentError(
            "group count was less than scaling policy minimum: " + std::to_string(*request.count) +
            " < " + std::to_string(group->scaling->min));
      }
      if (*request.count > group->scaling->max) {
        return absl::InvalidArgumentError("group count was greater than scaling policy maximum: " +
                                          std::to_string(*request.count) + " > " +
                                          std::to_string(group->scaling->max));
      }
    }
    if (request.count && *request.count > std::numeric_limits<int>::max())
      return absl::InvalidArgumentError("scaling action count is too large");
    model::ScalingEvent event{.time = common::ToUnixNanos(clock_.Now()),
                              .count = request.count,
                              .previous_count = group->count,
                              .message = request.message,
                              .error = request.error,
                              .meta = request.meta};
    EvalResponse resp{.job_modify_index = current.job_modify_index};
    if (request.count) {
      model::Job scaled = current;
      for (model::TaskGroup& g : scaled.task_groups) {
        if (g.name == request.group)
          g.count = static_cast<int>(*request.count);
      }
      absl::StatusOr<PreparedJob> prepared = codec::PrepareJob(std::move(scaled), config_.region);
      if (!prepared.ok())
        return prepared.status();
      absl::StatusOr<std::vector<std::string>> warnings = CheckRegistration(prepared->job());
      if (!warnings.ok())
        return warnings.status();
      JobPtr stored = state_.UpsertJob(std::move(*prepared).Release());
      // A template's new count is for its children: nothing to evaluate (Nomad's).
      if (!stored->IsPeriodic() && !stored->IsParameterized()) {
        resp = CreateEval(*stored, model::kTriggerScaling);
        event.eval_id = resp.eval_id;
      } else {
        resp.job_modify_index = stored->job_modify_index;
        resp.index = stored->modify_index;
      }
    }
    const model::ScalingEvent recorded =
        state_.AddScalingEvent(request.ns, request.job_id, request.group, std::move(event));
    if (resp.index == 0)
      resp.index = recorded.create_index;
    return resp;
  };
  std::function<void()> undo = [&] { state_.RestoreJob(before); };
  co_return co_await Durably(write, undo);
}

}  // namespace drover::server
