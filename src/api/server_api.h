// What the HTTP API asks of a server: reads of its state, blocking queries, writes that
// complete once durable, and the node-facing calls behind Drover's RPC port. The API
// sees this and nothing of the server's internals; the agent adapts server::Server to
// it (agent/server_adapter.h), and tests answer it with fakes.
//
// Every method is called on the control loop. Objects handed out are immutable
// (model::JobPtr and friends) and may be kept.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "codec/prepared_job.h"
#include "common/asio.h"
#include "common/clock.h"
#include "model/prev_alloc_info.h"
#include "model/server_types.h"

namespace drover::api {

// One server of the cluster (docs/ha.md).
struct ServerPeer {
  std::string name;
  std::string http_addr;
  std::string rpc_addr;
  bool leader = false;
};

class ServerApi {
 public:
  virtual ~ServerApi() = default;

  // The cluster's servers, the leader marked; empty when this server is the only one
  // (the agent's own addresses describe it).
  virtual std::vector<ServerPeer> Peers() const = 0;
  // Whether this server leads: only the leader writes (a follower's writes go to it).
  virtual bool IsLeader() const = 0;

  // What /v1/agent/self shows under stats.raft (Nomad's place for them): the server's
  // role, its index, and with etcd its revision and the records it could not decode.
  virtual std::map<std::string, std::string> ReplicationStats() const = 0;

  // Operator snapshots (docs/ha.md). The returned function encodes every record of the
  // state as of now: run it on the pool.
  virtual std::function<std::vector<model::StateRecord>()> SnapshotState() const = 0;
  // Replaces the whole state with `records`, durably.
  virtual asio::awaitable<absl::Status> RestoreState(std::vector<model::StateRecord> records) = 0;
  // PUT /v1/system/gc: removes, durably, every finished evaluation, allocation, job and
  // down node that the garbage collection may take, whatever its age.
  virtual asio::awaitable<absl::Status> CollectGarbage() = 0;

  // The scheduler configuration (/v1/operator/scheduler/configuration): the stored one,
  // else the default.
  virtual model::SchedulerConfig SchedulerConfiguration() const = 0;
  // Stores it durably; with `cas`, only if its ModifyIndex is that. Answers whether it
  // was stored, and the index.
  virtual asio::awaitable<absl::StatusOr<std::pair<bool, uint64_t>>> SetSchedulerConfigDurably(
      model::SchedulerConfig config, std::optional<uint64_t> cas) = 0;
  // DELETE /v1/evaluations: only while the eval broker is paused, and only evaluations
  // that are safe to delete; answers with the index.
  virtual asio::awaitable<absl::StatusOr<uint64_t>> DeleteEvalsDurably(
      std::vector<std::string> ids) = 0;

  // The region the server serves (jobs of another are refused).
  virtual const std::string& region() const = 0;

  // Reads. `ns` is a namespace or "*" for all; `prefix` filters IDs.
  virtual model::JobPtr GetJob(const std::string& ns, const std::string& id) const = 0;
  virtual std::vector<model::JobPtr> ListJobs(const std::string& ns,
                                              const std::string& prefix) const = 0;
  virtual model::JobSummary JobSummary(const model::Job& job) const = 0;
  virtual model::EvalPtr GetEval(const std::string& id) const = 0;
  virtual std::vector<model::EvalPtr> ListEvals(const std::string& ns,
                                                const std::string& prefix) const = 0;
  virtual std::vector<model::EvalPtr> EvalsByJob(const std::string& ns,
                                                 const std::string& job_id) const = 0;
  virtual model::AllocPtr GetAlloc(const std::string& id) const = 0;
  virtual std::vector<model::AllocPtr> ListAllocs(const std::string& ns,
                                                  const std::string& prefix) const = 0;
  virtual std::vector<model::AllocPtr> AllocsByJob(const std::string& ns,
                                                   const std::string& job_id) const = 0;
  virtual std::vector<model::AllocPtr> AllocsByNode(const std::string& node_id) const = 0;
  virtual std::vector<model::AllocPtr> AllocsByEval(const std::string& eval_id) const = 0;
  virtual model::NodePtr GetNode(const std::string& id) const = 0;
  virtual std::vector<model::NodePtr> ListNodes(const std::string& prefix) const = 0;

  // Blocking queries: the highest modify index of all tables, and of one; BlockUntil
  // completes once one of `tables` passes `min_index` (at once for 0) or `max_wait`
  // passes, with the highest index of `tables`.
  virtual uint64_t LatestIndex() const = 0;
  virtual uint64_t TableIndex(model::Table table) const = 0;
  virtual asio::awaitable<uint64_t> BlockUntil(std::vector<model::Table> tables, uint64_t min_index,
                                               common::Duration max_wait) = 0;

  // Writes, each answered once what it changed is durable; a change that cannot be
  // made durable is undone and its error returned. NotFound names what is missing;
  // FailedPrecondition is a conflict (EnforceIndex); InvalidArgument bad input.
  // `enforce_index`: register only if the job's JobModifyIndex is that (0: the job
  // must not exist).
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> RegisterJobDurably(
      codec::PreparedJob job, std::optional<uint64_t> enforce_index) = 0;
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> DeregisterJobDurably(
      std::string ns, std::string id, bool purge, bool no_shutdown_delay) = 0;
  // Stops the allocation and places a replacement.
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> StopAllocDurably(
      std::string alloc_id, bool no_shutdown_delay) = 0;
  // "eligible" or "ineligible".
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> SetNodeEligibilityDurably(
      std::string node_id, std::string eligibility) = 0;
  // Starts or changes a drain (`spec`), or stops one (no spec; `mark_eligible` makes the
  // node eligible again).
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> UpdateNodeDrainDurably(
      std::string node_id, std::optional<model::DrainSpec> spec, bool mark_eligible,
      std::map<std::string, std::string> meta) = 0;

  // Job versions (docs/jobs.md). Every kept version of a job, newest first (empty for
  // none).
  virtual std::vector<model::JobPtr> JobVersions(const std::string& ns,
                                                 const std::string& id) const = 0;
  // Marks a kept version stable (or not); answers with the write's index.
  virtual asio::awaitable<absl::StatusOr<uint64_t>> SetJobStabilityDurably(std::string ns,
                                                                           std::string id,
                                                                           uint64_t version,
                                                                           bool stable) = 0;
  // Registers a kept earlier version again; with `enforce_prior_version`, only while
  // the job is at that version.
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> RevertJobDurably(
      std::string ns, std::string id, uint64_t version,
      std::optional<uint64_t> enforce_prior_version) = 0;
  // A new evaluation of the job; `force_reschedule` replaces failed allocations now.
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> EvaluateJobDurably(
      std::string ns, std::string id, bool force_reschedule) = 0;
  // What registering `job` would do; stores nothing. `diff`: with the annotated diff.
  virtual asio::awaitable<absl::StatusOr<model::JobPlan>> PlanJob(codec::PreparedJob job,
                                                                  bool diff) = 0;

  // The change feed (docs/api.md#event-stream): StateStore's EventsFrom,
  // EventSeqAtIndex, and a wait until what changed so far is durable.
  virtual absl::StatusOr<std::vector<model::StateEventPtr>> EventsFrom(uint64_t seq,
                                                                       size_t max) const = 0;
  virtual uint64_t EventSeqAtIndex(uint64_t index) const = 0;
  virtual asio::awaitable<absl::Status> WaitDurable() = 0;

  // Periodic and parameterized jobs (docs/jobs.md#periodic-jobs): a periodic job's
  // launch now, and a dispatch of a parameterized one.
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> ForcePeriodicDurably(
      std::string ns, std::string id) = 0;
  virtual asio::awaitable<absl::StatusOr<model::DispatchResponse>> DispatchJobDurably(
      model::DispatchRequest request) = 0;

  // Scaling (docs/jobs.md#scaling): a group's count set through the API, or an event
  // recorded; and a job's scaling events (null for none).
  using ScaleRequest = model::ScaleRequest;
  virtual asio::awaitable<absl::StatusOr<model::EvalResponse>> ScaleJobDurably(
      ScaleRequest request) = 0;
  virtual std::shared_ptr<const model::JobScalingEvents> ScalingEvents(
      const std::string& ns, const std::string& job_id) const = 0;

  // Deployments (docs/jobs.md#deployments). DeploymentsByJob: newest first.
  virtual model::DeploymentPtr GetDeployment(const std::string& id) const = 0;
  virtual std::vector<model::DeploymentPtr> ListDeployments(const std::string& ns,
                                                            const std::string& prefix) const = 0;
  virtual std::vector<model::DeploymentPtr> DeploymentsByJob(const std::string& ns,
                                                             const std::string& job_id) const = 0;
  // Nomad's deployment writes, durable as the others; NotFound "deployment not found",
  // FailedPrecondition for a refusal (a terminal deployment, unhealthy canaries).
  // `groups` empty with `all`: every group.
  virtual asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> PromoteDeploymentDurably(
      std::string id, bool all, std::vector<std::string> groups) = 0;
  virtual asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> FailDeploymentDurably(
      std::string id) = 0;
  virtual asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> PauseDeploymentDurably(
      std::string id, bool pause) = 0;
  virtual asio::awaitable<absl::StatusOr<model::DeploymentUpdateResponse>> SetAllocHealthDurably(
      std::string id, std::vector<std::string> healthy, std::vector<std::string> unhealthy) = 0;

  // The node-facing calls (rpc/protocol.h). Registration and heartbeats answer with the
  // node's next heartbeat TTL; NotFound tells a node to register (again).
  virtual absl::StatusOr<common::Duration> RegisterNode(model::Node node) = 0;
  virtual absl::StatusOr<common::Duration> Heartbeat(const std::string& node_id) = 0;
  // OK for a registered node with that secret; PermissionDenied for a wrong one;
  // NotFound for a node the server does not know.
  virtual absl::Status AuthenticateNode(const std::string& node_id,
                                        const std::string& secret_id) const = 0;
  // A node's status updates, answered once durable. PermissionDenied, and nothing
  // changes, when one names another node's allocation.
  virtual asio::awaitable<absl::Status> UpdateAllocsDurably(
      std::string node_id, std::vector<model::AllocClientUpdate> updates) = 0;
  // Events the node reports about itself; InvalidArgument beyond the bounds of
  // model::kMaxNodeEventsPerCall and its neighbours.
  virtual absl::Status EmitNodeEvents(const std::string& node_id,
                                      std::vector<model::NodeEvent> events) = 0;
  // The node's allocations once one changed after `min_index`, or after `max_wait`.
  virtual asio::awaitable<absl::StatusOr<model::NodeAllocs>> WatchNodeAllocs(
      std::string node_id, uint64_t min_index, common::Duration max_wait) = 0;
  // What the node's allocation `alloc_id` replaces, once it is done (or `max_wait`).
  virtual asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> WatchPreviousAlloc(
      std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait) = 0;
};

}  // namespace drover::api
