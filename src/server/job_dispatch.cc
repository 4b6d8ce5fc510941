// Dispatching a parameterized job (Nomad's Job.Dispatch).
#include <set>

#include "absl/strings/str_join.h"

#include "codec/limits.h"
#include "codec/prepared_job.h"
#include "server/server.h"

namespace drover::server {

namespace {

// Nomad's validateDispatchRequest: the payload and meta against the job's block.
absl::Status CheckDispatch(const model::DispatchRequest& request,
                           const model::ParameterizedJobConfig& p) {
  const bool has_payload = !request.payload.empty();
  if (p.payload == model::kDispatchPayloadRequired && !has_payload)
    return absl::FailedPreconditionError(
        "Payload is not provided but required by parameterized job");
  if (p.payload == model::kDispatchPayloadForbidden && has_payload)
    return absl::FailedPreconditionError("Payload provided but forbidden by parameterized job");
  if (request.payload.size() > codec::JobLimits::kMaxPayloadBytes) {
    return absl::FailedPreconditionError("Payload exceeds maximum size; " +
                                         std::to_string(request.payload.size()) + " > " +
                                         std::to_string(codec::JobLimits::kMaxPayloadBytes));
  }
  const std::set<std::string> required(p.meta_required.begin(), p.meta_required.end());
  const std::set<std::string> optional(p.meta_optional.begin(), p.meta_optional.end());
  std::vector<std::string> unpermitted;
  for (const auto& [key, value] : request.meta) {
    if (!required.contains(key) && !optional.contains(key))
      unpermitted.push_back(key);
  }
  if (!unpermitted.empty()) {
    return absl::FailedPreconditionError("Dispatch request included unpermitted metadata keys: [" +
                                         absl::StrJoin(unpermitted, " ") + "]");
  }
  std::vector<std::string> missing;
  for (const std::string& key : required) {
    if (!request.meta.contains(key))
      missing.push_back(key);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError("Dispatch did not provide required meta keys: [" +
                                         absl::StrJoin(missing, " ") + "]");
  }
  return absl::OkStatus();
}

}  // namespace

asio::awaitable<absl::StatusOr<Server::DispatchResponse>> Server::DispatchJobDurably(
    DispatchRequest request) {
  std::optional<StateStore::JobSnapshot> before;
  DispatchResponse out;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    JobPtr parent = state_.GetJob(request.ns, request.job_id);
    if (!parent)
      return absl::NotFoundError("parameterized job \"" + request.job_id + "\" not found");
    if (!parent->IsParameterized()) {
      return absl::FailedPreconditionError("Specified job \"" + request.job_id +
                                           "\" is not a parameterized job");
    }
    if (parent->stop)
      return absl::FailedPreconditionError("Specified job \"" + request.job_id + "\" is stopped");
    if (absl::Status s = CheckDispatch(request, *parent->parameterized); !s.ok())
      return s;
    if (!request.idempotency_token.empty()) {
      // A retry: the child the token made first, while the state still has it.
      for (const JobPtr& child : state_.ChildJobs(request.ns, request.job_id)) {
        if (child->dispatch_idempotency_token == request.idempotency_token) {
          out.dispatched_job_id = child->id;
          out.job_create_index = child->create_index;
          out.index = child->modify_index;
          return EvalResponse{.index = child->modify_index};
        }
      }
    }
    model::Job child = DispatchChild(*parent, request, clock_.Now());
    absl::StatusOr<PreparedJob> prepared = codec::PrepareJob(std::move(child), config_.region);
    if (!prepared.ok())
      return prepared.status();
    before = state_.SnapshotJob(request.ns, prepared->job().id);
    // A periodic template's dispatched child launches on its schedule: RegisterJob
    // evaluates it or records its first launch.
    absl::StatusOr<EvalResponse> registered = RegisterJob(*std::move(prepared));
    if (!registered.ok())
      return registered.status();
    JobPtr stored = state_.GetJob(request.ns, before->id);
    out.dispatched_job_id = stored->id;
    out.job_create_index = stored->create_index;
    out.eval_id = registered->eval_id;
    out.eval_create_index = registered->eval_create_index;
    out.index = registered->index;
    return registered;
  };
  std::function<void()> undo = [&] {
    if (before)
      state_.RestoreJob(*before);
  };
  absl::StatusOr<EvalResponse> resp = co_await Durably(write, undo);
  if (!resp.ok())
    co_return resp.status();
  co_return out;
}

}  // namespace drover::server
