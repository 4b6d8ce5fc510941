// Nomad's Deployment RPCs as durable writes: promote, fail, pause and resume, and
// setting allocations' health by hand.
#include <algorithm>

#include "common/ids.h"
#include "server/server.h"

namespace drover::server {

namespace {

// What a deployment write may change, kept to undo it when it cannot be made durable:
// the deployment, its job (a revert) and the job's allocations (canary marks, health).
struct DeploymentWriteUndo {
  StateStore& state;
  std::string id;
  DeploymentPtr deployment;
  StateStore::JobSnapshot job;
  std::vector<AllocPtr> allocs;

  void Take(const model::Deployment& d) {
    deployment = state.GetDeployment(d.id);
    job = state.SnapshotJob(d.namespace_, d.job_id);
    allocs = state.AllocsByJob(d.namespace_, d.job_id);
  }
  void Undo() {
    if (!deployment)
      return;
    std::vector<AllocPtr> before;
    std::vector<AllocPtr> after;
    for (const AllocPtr& a : allocs) {
      if (AllocPtr now = state.GetAlloc(a->id); now && now != a) {
        before.push_back(a);
        after.push_back(now);
      }
    }
    state.RestoreAllocs(before, after);
    state.RestoreJob(job);
    state.RestoreDeployment(id, deployment);
  }
};

}  // namespace

asio::awaitable<absl::StatusOr<Server::DeploymentUpdateResponse>> Server::DeploymentWrite(
    std::string id, std::string verb, DeploymentOp op) {
  DeploymentWriteUndo saved{.state = state_, .id = id};
  DeploymentUpdateResponse out;
  std::function<absl::StatusOr<EvalResponse>()> write = [&]() -> absl::StatusOr<EvalResponse> {
    const DeploymentPtr d = state_.GetDeployment(id);
    if (!d)
      return absl::NotFoundError("deployment not found");
    if (!d->Active())
      return absl::FailedPreconditionError("can't " + verb + " terminal deployment");
    saved.Take(*d);
    absl::StatusOr<DeploymentUpdateResponse> r = op(*d);
    if (!r.ok())
      return r.status();
    out = *std::move(r);
    return EvalResponse{};
  };
  std::function<void()> undo = [&] { saved.Undo(); };
  absl::StatusOr<EvalResponse> done = co_await Durably(write, undo);
  if (!done.ok())
    co_return done.status();
  co_return out;
}

asio::awaitable<absl::StatusOr<Server::DeploymentUpdateResponse>> Server::PromoteDeploymentDurably(
    std::string id, bool all, std::vector<std::string> groups) {
  if (all)
    groups.clear();
  DeploymentOp op = [this, groups](const model::Deployment& d) {
    return PromoteDeployment(d, groups);
  };
  co_return co_await DeploymentWrite(std::move(id), "promote", std::move(op));
}

asio::awaitable<absl::StatusOr<Server::DeploymentUpdateResponse>> Server::FailDeploymentDurably(
    std::string id) {
  DeploymentOp op = [this](const model::Deployment& d) {
    return FailDeployment(d, model::kDeploymentDescFailedByUser, /*rollback=*/true);
  };
  co_return co_await DeploymentWrite(std::move(id), "fail", std::move(op));
}

asio::awaitable<absl::StatusOr<Server::DeploymentUpdateResponse>> Server::PauseDeploymentDurably(
    std::string id, bool pause) {
  DeploymentOp op =
      [this, pause](const model::Deployment& d) -> absl::StatusOr<DeploymentUpdateResponse> {
    DeploymentPtr updated =
        SetDeploymentStatus(d.id, pause ? model::kDeploymentPaused : model::kDeploymentRunning,
                            pause ? model::kDeploymentDescPaused : model::kDeploymentDescRunning);
    DeploymentUpdateResponse r{.deployment_modify_index = updated->modify_index};
    if (!pause) {
      EvalResponse e = CreateDeploymentEval(*updated);
      r.eval_id = e.eval_id;
      r.eval_create_index = e.eval_create_index;
    }
    r.index = state_.LatestIndex();
    return r;
  };
  std::string verb = pause ? "pause" : "resume";
  co_return co_await DeploymentWrite(std::move(id), std::move(verb), std::move(op));
}

asio::awaitable<absl::StatusOr<Server::DeploymentUpdateResponse>> Server::SetAllocHealthDurably(
    std::string id, std::vector<std::string> healthy, std::vector<std::string> unhealthy) {
  DeploymentOp op = [this, healthy, unhealthy](
                        const model::Deployment& d) -> absl::StatusOr<DeploymentUpdateResponse> {
    if (healthy.empty() && unhealthy.empty())
      return absl::InvalidArgumentError(
          "must specify at least one healthy/unhealthy allocation ID");
    std::vector<model::AllocClientUpdate> updates;
    const common::Time now = clock_.Now();
    for (const auto& [ids, verdict] : {std::pair{&healthy, true}, std::pair{&unhealthy, false}}) {
      for (const std::string& alloc_id : *ids) {
        const AllocPtr a = state_.GetAlloc(alloc_id);
        if (!a)
          return absl::FailedPreconditionError("unknown alloc \"" + alloc_id + "\"");
        if (a->deployment_id != d.id) {
          return absl::FailedPreconditionError("alloc \"" + alloc_id +
                                               "\" is not part of deployment \"" + d.id + "\"");
        }
        model::AllocClientUpdate u{
            .id = a->id,
            .node_id = a->node_id,
            .task_states = a->task_states,
            .client_status = a->client_status,
            .client_description = a->client_description,
            .deployment_status = a->deployment_status.value_or(model::AllocDeploymentStatus{}),
            .deployment_id = d.id};
        u.deployment_status->healthy = verdict;
        u.deployment_status->timestamp = now;
        updates.push_back(std::move(u));
      }
    }
    state_.UpdateAllocsFromClient(updates);
    const DeploymentPtr after = state_.GetDeployment(d.id);
    if (!unhealthy.empty()) {
      return FailDeployment(*after, model::kDeploymentDescFailedAllocations,
                            /*rollback=*/true);
    }
    EvalResponse e = CreateDeploymentEval(*after);
    return DeploymentUpdateResponse{.eval_id = e.eval_id,
                                    .eval_create_index = e.eval_create_index,
                                    .deployment_modify_index = after->modify_index,
                                    .index = state_.LatestIndex()};
  };
  co_return co_await DeploymentWrite(std::move(id), "set health of allocations for a",
                                     std::move(op));
}

}  // namespace drover::server
