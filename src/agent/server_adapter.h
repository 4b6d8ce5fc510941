// The embedded server as the HTTP API sees it (api/server_api.h): every call forwards
// to server::Server or its state store, unchanged.
#pragma once

#include "api/server_api.h"
#include "server/ha.h"
#include "server/server.h"

namespace drover::agent {

class ServerAdapter final : public api::ServerApi {
 public:
  // `server` (and `ha`, with etcd) must outlive the adapter.
  explicit ServerAdapter(server::Server& server, const server::HaCoordinator* ha = nullptr)
      : server_(server), ha_(ha) {}

  std::vector<api::ServerPeer> Peers() const override;
  bool IsLeader() const override { return server_.leader(); }
  std::map<std::string, std::string> ReplicationStats() const override;
  std::function<std::vector<model::StateRecord>()> SnapshotState() const override {
    return server_.state().SnapshotRecords();
  }
  asio::awaitable<absl::Status> RestoreState(std::vector<model::StateRecord> records) override {
    return server_.RestoreSnapshotDurably(std::move(records));
  }
  asio::awaitable<absl::Status> CollectGarbage() override {
    return server_.CollectGarbageDurably();
  }

  model::SchedulerConfig SchedulerConfiguration() const override {
    return server_.SchedulerConfiguration();
  }
  asio::awaitable<absl::StatusOr<std::pair<bool, uint64_t>>> SetSchedulerConfigDurably(
      model::SchedulerConfig config, std::optional<uint64_t> cas) override;
  asio::awaitable<absl::StatusOr<uint64_t>> DeleteEvalsDurably(
      std::vector<std::string> ids) override {
    return server_.DeleteEvalsDurably(std::move(ids));
  }

  const std::string& region() const override { return server_.config().region; }

  model::JobPtr GetJob(const std::string& ns, const std::string& id) const override;
  std::vector<model::JobPtr> ListJobs(const std::string& ns,
                                      const std::string& prefix) const override;
  model::JobSummary JobSummary(const model::Job& job) const override;
  model::EvalPtr GetEval(const std::string& id) const override;
  std::vector<model::EvalPtr> ListEvals(const std::string& ns,
                                        const std::string& prefix) const override;
  std::vector<model::EvalPtr> EvalsByJob(const std::string& ns,
                                         const std::string& job_id) const override;
  model::AllocPtr GetAlloc(const std::string& id) const override;
  std::vector<model::AllocPtr> ListAllocs(const std::string& ns,
                                          const std::string& prefix) const override;
  std::vector<model::AllocPtr> AllocsByJob(const std::string& ns,
                                           const std::string& job_id) const override;
  std::vector<model::AllocPtr> AllocsByNode(const std::string& node_id) const override;
  std::vector<model::AllocPtr> AllocsByEval(const std::string& eval_id) const override;
  model::NodePtr GetNode(const std::string& id) const override;
  std::vector<model::NodePtr> ListNodes(const std::string& prefix) const override;

  uint64_t LatestIndex() const override;
  uint64_t TableIndex(model::Table table) const override;
  asio::awaitable<uint64_t> BlockUntil(std::vector<model::Table> tables, uint64_t min_index,
                                       common::Duration max_wait) override;

  asio::awaitable<absl::StatusOr<model::EvalResponse>> RegisterJobDurably(
      codec::PreparedJob job, std::optional<uint64_t> enforce_index) override;
  asio::awaitable<absl::StatusOr<model::EvalResponse>> DeregisterJobDurably(
      std::string ns, std::string id, bool purge, bool no_shutdown_delay) override;
  asio::awaitable<absl::StatusOr<model::EvalResponse>> StopAllocDurably(
      std::string alloc_id, bool no_shutdown_delay) override;
  asio::awaitable<absl::StatusOr<model::EvalResponse>> SetNodeEligibilityDurably(
      std::string node_id, std::string eligibility) override;
  asio::awaitable<absl::StatusOr<model::EvalResponse>> UpdateNodeDrainDurably(
      std::string node_id, std::optional<model::DrainSpec> spec, bool mark_eligible,
      std::map<std::string, std::string> meta) override;

  std::vector<model::JobPtr> JobVersions(const std::string& ns,
                                         const std::string& id) const override {
    return server_.state().JobVersions(ns, id);
  }
  asio::awaitable<absl::StatusOr<uint64_t>> SetJobStabilityDurably(std::string ns, std::string id,
                                                                   uint64_t version,
                                                                   bool stable) override {
    return server_.SetJobStabilityDurably(std::move(ns), std::move(id), version, stable);
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> RevertJobDurably(
      std::string ns, std::string id, uint64_t version,
      std::optional<uint64_t> enforce_prior_version) override {
    return server_.RevertJobDurably(std::move(ns), std::move(id), version, enforce_prior_version);
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> EvaluateJobDurably(
      std::string ns, std::string id, bool force_reschedule) override {
    return server_.EvaluateJobDurably(std::move(ns), std::move(id), force_reschedule);
  }
  asio::awaitable<absl::StatusOr<model::JobPlan>> PlanJob(codec::PreparedJob job,
                                                          bool diff) override {
    return server_.PlanJob(std::move(job), diff);
  }

  absl::StatusOr<std::vector<model::StateEventPtr>> EventsFrom(uint64_t seq,
                                                               size_t max) const override {
    return server_.state().EventsFrom(seq, max);
  }
  uint64_t EventSeqAtIndex(uint64_t index) const override {
    return server_.state().EventSeqAtIndex(index);
  }
  asio::awaitable<absl::Status> WaitDurable() override { return server_.state().Flush(); }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> ForcePeriodicDurably(
      std::string ns, std::string id) override {
    return server_.ForcePeriodicDurably(std::move(ns), std::move(id));
  }
  asio::awaitable<absl::StatusOr<model::DispatchResponse>> DispatchJobDurably(
      model::DispatchRequest request) override {
    return server_.DispatchJobDurably(std::move(request));
  }
  asio::awaitable<absl::StatusOr<model::EvalResponse>> ScaleJobDurably(
      ScaleRequest request) override {
    return server_.ScaleJobDurably(std::move(request));
  }
  model::DeploymentPtr GetDeployment(const std::string& id) const override {
    return server_.state().GetDeployment(id);
  }
  std::vector<model::DeploymentPtr> ListDeployments(const std::string& ns,
                                                    const std::string& prefix) const override {
    return server_.state().ListDeployments(ns, prefix);
  }
  std::vector<model::DeploymentPtr> DeploymentsByJob(const std::string& ns,
                                                     const std::string& job_id) const override {
    return server_.state().DeploymentsByJob(ns, job_id);
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> PromoteDeploymentDurably(
      std::string id, bool all, std::vector<std::string> groups) override {
    return server_.PromoteDeploymentDurably(std::move(id), all, std::move(groups));
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> FailDeploymentDurably(
      std::string id) override {
    return server_.FailDeploymentDurably(std::move(id));
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> PauseDeploymentDurably(
      std::string id, bool pause) override {
    return server_.PauseDeploymentDurably(std::move(id), pause);
  }
  asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> SetAllocHealthDurably(
      std::string id, std::vector<std::string> healthy,
      std::vector<std::string> unhealthy) override {
    return server_.SetAllocHealthDurably(std::move(id), std::move(healthy), std::move(unhealthy));
  }
  std::shared_ptr<const model::JobScalingEvents> ScalingEvents(
      const std::string& ns, const std::string& job_id) const override {
    return server_.state().ScalingEvents(ns, job_id);
  }

  absl::StatusOr<common::Duration> RegisterNode(model::Node node) override;
  absl::StatusOr<common::Duration> Heartbeat(const std::string& node_id) override;
  absl::Status AuthenticateNode(const std::string& node_id,
                                const std::string& secret_id) const override;
  asio::awaitable<absl::Status> UpdateAllocsDurably(
      std::string node_id, std::vector<model::AllocClientUpdate> updates) override;
  absl::Status EmitNodeEvents(const std::string& node_id,
                              std::vector<model::NodeEvent> events) override;
  asio::awaitable<absl::StatusOr<model::NodeAllocs>> WatchNodeAllocs(
      std::string node_id, uint64_t min_index, common::Duration max_wait) override;
  asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> WatchPreviousAlloc(
      std::string node_id, std::string alloc_id, uint64_t min_index,
      common::Duration max_wait) override;

 private:
  server::Server& server_;
  const server::HaCoordinator* ha_;
};

}  // namespace drover::agent
