// The embedded server: validates and stores jobs, turns registrations into
// evaluations, runs the scheduler for each evaluation and applies its plan, tracks
// node registration and heartbeats, and takes clients' allocation status updates.
//
// Lives on the control loop; scheduler passes run on the blocking pool against an
// immutable snapshot (DESIGN.md §3). Evaluations are processed one at a time, in order.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "codec/prepared_job.h"
#include "common/async_mutex.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/event.h"
#include "model/prev_alloc_info.h"
#include "server/core_gc.h"
#include "server/periodic.h"
#include "server/state_store.h"

namespace drover::metrics {
class Registry;
}  // namespace drover::metrics

namespace drover::server {

struct PlanResult;      // scheduler.h
struct SchedulerInput;  // scheduler.h

struct ServerConfig {
  std::string region = "global";
  // Heartbeats, as Nomad's server block sets them: a node's TTL is min_heartbeat_ttl,
  // or longer once the node count would make the servers see more than
  // max_heartbeats_per_second, plus a random stagger of up to the same again. A node
  // is marked down once TTL + heartbeat_grace passes without a heartbeat.
  common::Duration min_heartbeat_ttl = std::chrono::seconds(10);
  double max_heartbeats_per_second = 50;
  common::Duration heartbeat_grace = std::chrono::seconds(10);
  // server.default_scheduler_config.memory_oversubscription_enabled: whether a task's
  // memory_max raises its hard memory limit above its memory (otherwise it is ignored,
  // with a warning at registration, as in Nomad).
  bool memory_oversubscription = false;
  // The scheduler benchmark's naive baseline (SchedulerInput::score_every_node).
  bool score_every_node = false;
  // One of several servers sharing state in etcd (docs/ha.md): Start does not make it
  // the leader; its HA coordinator does, while it holds the election.
  bool ha = false;
  // The largest job record the state may hold (0: no bound). With etcd one record must
  // fit one etcd request, and an allocation's record holds its job.
  size_t max_job_record_bytes = 0;
  // Garbage collection (core_gc.h): how old what finished must be before it goes
  // (server.eval_gc_threshold and friends), and how often the leader looks.
  GcThresholds gc;
  common::Duration gc_interval = std::chrono::minutes(5);
  // How many versions of each job the state keeps (server.job_tracked_versions): the
  // newest, and the newest stable one among them.
  size_t job_tracked_versions = 6;
  // How many events the event stream's buffer keeps (server.event_buffer_size).
  size_t event_buffer_size = StateStore::kDefaultMaxEvents;
};

using model::DrainSpec;
using model::EvalResponse;
using model::NodeAllocs;

class Server {
 public:
  // `pool` and `clock` must outlive the server.
  Server(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
         ServerConfig config);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts the evaluation worker and the heartbeat monitor (leads), unless config.ha.
  void Start();
  // Stops them; pending evaluations stay pending.
  void Stop();

  // Leadership (docs/ha.md). A server without etcd leads from Start to Stop. With
  // etcd, its coordinator calls these as a term begins (the state holds everything
  // earlier leaders wrote) and ends. Only a leader writes, schedules, drains and times
  // heartbeats; a follower's writes fail with NotLeaderError() and its reads serve its
  // replicated view. Ending a term drops what the leader had queued, and a scheduler
  // pass in flight is not applied.
  void EstablishLeadership();
  void RevokeLeadership();
  bool leader() const { return leader_; }
  // Unavailable: "not the leader", for writes made to a follower.
  static absl::Status NotLeaderError();

  StateStore& state() { return state_; }
  const ServerConfig& config() const { return config_; }

  // A job canonicalized and validated by codec::PrepareJob, ready to be stored.
  using PreparedJob = codec::PreparedJob;
  // Stores a new version of a prepared job and creates a "job-register" evaluation.
  absl::StatusOr<EvalResponse> RegisterJob(PreparedJob job);
  // PrepareJob, then RegisterJob, on the loop (for small jobs and tests).
  absl::StatusOr<EvalResponse> RegisterJob(model::Job job);
  // RegisterJob and DeregisterJob as the API makes them: they complete once what they
  // changed is durable (with a state DB). A change that cannot be made durable is
  // undone: the job is as it was, its evaluation is gone and nothing was scheduled
  // from it; the error is returned. One such write at a time.
  // With `enforce_index`, only if the job's JobModifyIndex is that (0: the job must not
  // exist); FailedPrecondition with Nomad's message otherwise.
  asio::awaitable<absl::StatusOr<EvalResponse>> RegisterJobDurably(
      PreparedJob job, std::optional<uint64_t> enforce_index = std::nullopt);
  asio::awaitable<absl::StatusOr<EvalResponse>> DeregisterJobDurably(std::string ns, std::string id,
                                                                     bool purge,
                                                                     bool no_shutdown_delay);
  // Stops the job (or removes it with `purge`) and creates a "job-deregister"
  // evaluation. NotFound "job not found".
  // With `no_shutdown_delay`, tasks skip their shutdown_delay when stopped.
  absl::StatusOr<EvalResponse> DeregisterJob(const std::string& ns, const std::string& id,
                                             bool purge, bool no_shutdown_delay = false);
  // Marks an allocation for migration and creates an "alloc-stop" evaluation, after
  // which the scheduler stops it and places a replacement. NotFound "alloc not found".
  absl::StatusOr<EvalResponse> StopAlloc(const std::string& alloc_id,
                                         bool no_shutdown_delay = false);
  asio::awaitable<absl::StatusOr<EvalResponse>> StopAllocDurably(std::string alloc_id,
                                                                 bool no_shutdown_delay);

  // PUT /v1/node/:id/eligibility: "eligible" or "ineligible" (InvalidArgument
  // otherwise; NotFound "node not found"). The node's system jobs are evaluated: an
  // ineligible node gives up their allocations, an eligible one gets them back. Durable
  // as RegisterJobDurably.
  asio::awaitable<absl::StatusOr<EvalResponse>> SetNodeEligibilityDurably(std::string node_id,
                                                                          std::string eligibility);

  // PUT /v1/node/:id/drain. With `spec`, starts (or changes) a drain: the node turns
  // ineligible and the drain loop migrates its allocations (drainer.h); once nothing
  // is left the drain completes and the node stays ineligible. Without, stops a drain
  // (allocations already moved stay moved), and `mark_eligible` makes the node eligible
  // again. `meta` is kept in the node's LastDrain. NotFound "node not found". Durable
  // as RegisterJobDurably.
  asio::awaitable<absl::StatusOr<EvalResponse>> UpdateNodeDrainDurably(
      std::string node_id, std::optional<DrainSpec> spec, bool mark_eligible,
      std::map<std::string, std::string> meta);

  // PUT /v1/operator/snapshot (docs/ha.md): replaces the whole state with a snapshot's
  // records (StateStore::Restore) and makes that durable; the leader's loops start
  // again from it (pending evaluations, heartbeat timers, drains). The leader only.
  asio::awaitable<absl::Status> RestoreSnapshotDurably(std::vector<model::StateRecord> records);

  // Job versions (job_versions.cc). Each write is durable as RegisterJobDurably.
  // POST /v1/job/:id/stable: marks a kept version stable or not; returns the index.
  asio::awaitable<absl::StatusOr<uint64_t>> SetJobStabilityDurably(std::string ns, std::string id,
                                                                   uint64_t version, bool stable);
  // POST /v1/job/:id/revert: registers a kept earlier version again (as a new version).
  // With `enforce_prior_version`, only while the job is at that version. Errors carry
  // Nomad's texts: NotFound "job not found"; "can't revert to current version", a
  // version that is not kept, or another current version are 500s (FailedPrecondition).
  asio::awaitable<absl::StatusOr<EvalResponse>> RevertJobDurably(
      std::string ns, std::string id, uint64_t version,
      std::optional<uint64_t> enforce_prior_version);
  // POST /v1/job/:id/evaluate: a new "job-register" evaluation of the job as it is.
  // With `force_reschedule`, failed allocations whose group may be rescheduled are
  // replaced now, whatever their policy's attempts and delay.
  asio::awaitable<absl::StatusOr<EvalResponse>> EvaluateJobDurably(std::string ns, std::string id,
                                                                   bool force_reschedule);
  // PUT /v1/job/:id/plan: what registering `job` would do, decided by the scheduler on
  // the pool against the state now; nothing is stored. With `diff`, the registered
  // job's diff to it, annotated (plan_annotate.h). Any server may plan.
  asio::awaitable<absl::StatusOr<model::JobPlan>> PlanJob(PreparedJob job, bool diff);

  // POST /v1/job/:id/scale (job_scaling.cc): sets a group's count (a new version of the
  // job and a "job-scaling" evaluation), or with no count only records the event (an
  // autoscaler's report, `error` for a failure). Every call records a scaling event.
  // Nomad's refusals, changing nothing: NotFound `job "x" not found`; InvalidArgument for a
  // group the job does not have, a negative count, a count with `error`, or a count
  // outside the group's scaling policy.
  using ScaleRequest = model::ScaleRequest;
  asio::awaitable<absl::StatusOr<EvalResponse>> ScaleJobDurably(ScaleRequest request);

  // Periodic jobs (periodic.cc). The leader launches each active periodic job's
  // children as its crons come (Nomad's periodic dispatcher); launches missed while no
  // leader ran are made up for by one launch. POST /v1/job/:id/periodic/force: a launch
  // now, whatever the schedule and prohibit_overlap. NotFound "job not found";
  // FailedPrecondition for a job that is not periodic, or whose launches are off
  // (disabled, stopped, a parameterized template), with Nomad's texts.
  asio::awaitable<absl::StatusOr<EvalResponse>> ForcePeriodicDurably(std::string ns,
                                                                     std::string id);
  // POST /v1/job/:id/dispatch (job_dispatch.cc): registers a child of a parameterized
  // job with the request's payload and meta, and evaluates it (unless the child is
  // periodic). A token already used by a child of the job that is still in the state
  // returns that child. Nomad's refusals, changing nothing: NotFound "parameterized job
  // \"x\" not found"; FailedPrecondition for a job that is not parameterized or is
  // stopped, a payload the job requires or forbids, one over 16 KiB, and meta keys
  // missing or not allowed.
  using DispatchRequest = model::DispatchRequest;
  using DispatchResponse = model::DispatchResponse;
  asio::awaitable<absl::StatusOr<DispatchResponse>> DispatchJobDurably(DispatchRequest request);

  // Deployments (deployment_ops.cc), Nomad's Deployment RPCs. Each is durable as
  // RegisterJobDurably and answers NotFound "deployment not found", or
  // FailedPrecondition "can't <op> terminal deployment" for one that finished.
  using DeploymentUpdateResponse = model::DeploymentUpdateResponse;
  // Promotes the canaries of every group (`all`) or of `groups`: each such group with
  // canaries must have as many healthy as it wants (FailedPrecondition "Task group
  // \"x\" has n/m healthy allocations" otherwise), and some group must have canaries
  // ("no canaries to promote").
  asio::awaitable<absl::StatusOr<DeploymentUpdateResponse>> PromoteDeploymentDurably(
      std::string id, bool all, std::vector<std::string> groups);
  // Fails the deployment ("Deployment marked as failed"), rolling back to the latest
  // stable version when a group has auto_revert.
  asio::awaitable<absl::StatusOr<DeploymentUpdateResponse>> FailDeploymentDurably(std::string id);
  // Pauses (no evaluation) or resumes (an evaluation) the deployment.
  asio::awaitable<absl::StatusOr<DeploymentUpdateResponse>> PauseDeploymentDurably(std::string id,
                                                                                   bool pause);
  // Sets the health of allocations of the deployment by hand (health_check "manual", or
  // overriding the clients'). An unhealthy one fails the deployment.
  asio::awaitable<absl::StatusOr<DeploymentUpdateResponse>> SetAllocHealthDurably(
      std::string id, std::vector<std::string> healthy, std::vector<std::string> unhealthy);

  // The scheduler configuration (scheduler_config.cc): what an operator set, else the
  // default (memory oversubscription from server.default_scheduler_config).
  model::SchedulerConfig SchedulerConfiguration() const;
  // PUT /v1/operator/scheduler/configuration: stores `config` durably. With `cas`, only
  // if the configuration's ModifyIndex is that (0: none was set); `updated` says whether
  // it was. Unpausing the eval broker lets the worker run what waited.
  struct SchedulerConfigUpdate {
    bool updated = false;
    uint64_t index = 0;
  };
  asio::awaitable<absl::StatusOr<SchedulerConfigUpdate>> SetSchedulerConfigDurably(
      model::SchedulerConfig config, std::optional<uint64_t> cas);
  // DELETE /v1/evaluations: removes the evaluations, durably, as Nomad allows it: only
  // while the eval broker is paused (FailedPrecondition otherwise), and only evaluations
  // whose allocations no longer need them (EvalDeleteSafe; FailedPrecondition naming
  // the first that is not, and nothing is deleted). NotFound "eval not found".
  asio::awaitable<absl::StatusOr<uint64_t>> DeleteEvalsDurably(std::vector<std::string> ids);

  // PUT /v1/system/gc: collects now everything that may go, whatever its age, and
  // completes once that is durable. The leader only.
  asio::awaitable<absl::Status> CollectGarbageDurably();

  // Client-facing calls (through ServerRpc). Registration and heartbeats answer with
  // the node's next heartbeat TTL.
  // A registration of a known node ID with another secret is PermissionDenied: one node
  // cannot take over another's identity (and allocations).
  absl::StatusOr<common::Duration> RegisterNode(model::Node node);
  // NotFound "node not found" when the node must register (again).
  absl::StatusOr<common::Duration> Heartbeat(const std::string& node_id);
  // OK when `node_id` is a registered node whose secret is `secret_id`;
  // PermissionDenied for a wrong secret; NotFound for a node the server does not know
  // (or knows without a secret, as recorded before secrets were kept), so that its
  // client registers.
  absl::Status AuthenticateNode(const std::string& node_id, const std::string& secret_id) const;
  // Takes a node's status updates for its allocations. PermissionDenied, and nothing
  // changes, when one names an allocation placed on another node; updates for
  // allocations the server no longer has are ignored.
  absl::Status UpdateAllocsFromClient(const std::string& node_id,
                                      const std::vector<model::AllocClientUpdate>& updates);
  // A node's allocations, once one of them changed after `min_index` (at once for 0),
  // or after `max_wait`; only once what they say is durable (as with a Raft commit
  // index): a crash cannot forget an allocation whose tasks a client already started.
  // Other nodes' changes do not wake the query.
  asio::awaitable<absl::StatusOr<NodeAllocs>> WatchNodeAllocs(std::string node_id,
                                                              uint64_t min_index,
                                                              common::Duration max_wait);
  // The allocation that `alloc_id` (one of node `node_id`'s) replaces, for the node to
  // wait for it and pull its ephemeral disk: at once for `min_index` 0, else once it is
  // done (model::PrevAllocInfo) or `max_wait` passes; only once durable. The migrate
  // token is derived from the previous node's secret. PermissionDenied when `alloc_id`
  // is not the node's, FailedPrecondition when it replaces none.
  asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> WatchPreviousAlloc(
      std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait);
  // UpdateAllocsFromClient, completed once durable: the client records the
  // acknowledgement and does not send the same state again after a restart.
  asio::awaitable<absl::Status> UpdateAllocsDurably(std::string node_id,
                                                    std::vector<model::AllocClientUpdate> updates);
  // Events a node reports about itself (a driver's health), added to its record; the
  // servers stamp their index, and their time when the node's is missing or ahead of
  // theirs. InvalidArgument, and nothing changes, beyond model::kMaxNodeEventsPerCall or
  // the size bounds beside it, or for an event without message or subsystem; NotFound
  // "node not found".
  absl::Status EmitNodeEvents(const std::string& node_id, std::vector<model::NodeEvent> events);
  // The TTL the next heartbeat of a node gets (Nomad's rate-scaled interval, staggered).
  common::Duration NextHeartbeatTtl();

  // Number of evaluations waiting for the worker (for tests and metrics).
  size_t pending_evals() const { return queue_.size(); }
  // Where the worker records its timings (nomad.nomad.worker.invoke_scheduler.<type>,
  // nomad.nomad.plan.apply); null for none. Must outlive the server.
  void set_metrics(metrics::Registry* registry) { metrics_ = registry; }

 private:
  // What registering `job` warns about; an error for a job the state cannot take.
  absl::StatusOr<std::vector<std::string>> CheckRegistration(const model::Job& job) const;
  // The scheduler's input for `eval` against the state now (job: `job`).
  SchedulerInput MakeSchedulerInput(const model::Evaluation& eval, JobPtr job);
  // Starts a term's loops after queuing what the state left pending.
  void BeginTerm();
  // Stops them and drops what they held.
  void EndTermLoops();
  // An event the server records now.
  model::NodeEvent Event(std::string subsystem, std::string message) const;
  absl::StatusOr<model::PrevAllocInfo> DescribePreviousAlloc(const std::string& node_id,
                                                             const std::string& alloc_id) const;
  // Runs `write` (a change that creates evaluations) and waits until it is durable; if
  // it cannot be, removes the evaluations it created and runs `undo`. Evaluations are
  // queued only once the change is durable.
  asio::awaitable<absl::StatusOr<EvalResponse>> Durably(
      const std::function<absl::StatusOr<EvalResponse>()>& write,
      const std::function<void()>& undo);
  EvalResponse CreateEval(const model::Job& job, const std::string& triggered_by,
                          const std::string& deployment_id = "");
  // Deployments (deployments.cc). Applies what a scheduler pass decided about
  // deployments, before its allocations are stored.
  void ApplyPlanDeployments(const PlanResult& plan);
  // Stores a status change; a successful deployment marks its job version stable.
  model::DeploymentPtr SetDeploymentStatus(const std::string& id, const std::string& status,
                                           const std::string& description);
  // Fails `d` with `description` and creates its evaluation: when `rollback` and a group
  // auto-reverts, the latest stable version is registered again (a new version), and
  // the description says so (Nomad's suffixes). The version is marked unstable.
  absl::StatusOr<DeploymentUpdateResponse> FailDeployment(const model::Deployment& d,
                                                          std::string description, bool rollback);
  // Promotes the groups of `d` (every one when `groups` is empty); see
  // PromoteDeploymentDurably.
  absl::StatusOr<DeploymentUpdateResponse> PromoteDeployment(
      const model::Deployment& d, const std::vector<std::string>& groups);
  EvalResponse CreateDeploymentEval(const model::Deployment& d);
  // Runs `op` on deployment `id` as a durable write, once it is found and active
  // ("can't <verb> terminal deployment" otherwise).
  using DeploymentOp =
      std::function<absl::StatusOr<DeploymentUpdateResponse>(const model::Deployment&)>;
  asio::awaitable<absl::StatusOr<DeploymentUpdateResponse>> DeploymentWrite(std::string id,
                                                                            std::string verb,
                                                                            DeploymentOp op);
  // The deployment watcher: one pass whenever allocations or deployments change, or a
  // progress deadline comes. Fails deployments with unhealthy allocations or past their
  // deadline, promotes those whose groups auto-promote, and evaluates jobs whose
  // deployments gained healthy allocations. Returns the next deadline.
  asio::awaitable<void> DeploymentLoop(common::CancellationScopePtr term);
  std::optional<common::Time> DeploymentPass();
  // Marks the deployment's running allocations that turned unhealthy, in groups with a
  // progress deadline, for rescheduling (DesiredTransition.Reschedule), and evaluates
  // the job. Canaries are not replaced: the progress deadline decides for them.
  void MarkUnhealthyForReplacement(const model::Deployment& d, const model::Job& job);
  // Queues the evaluation for the worker; one with a WaitUntil ahead waits for it.
  void Enqueue(const std::string& eval_id);
  asio::awaitable<void> EnqueueAt(std::string eval_id, common::Time at,
                                  common::CancellationScopePtr term);
  void UnblockEvals();
  // The leader-only loops run until their term's scope is cancelled.
  asio::awaitable<void> EvalWorker(common::CancellationScopePtr term);
  asio::awaitable<void> ProcessEval(model::Evaluation eval);
  // Whether `plan` marks unknown an allocation whose node came back while the plan was
  // made: the marking is dropped on apply, and the job wants another evaluation so that
  // one of the allocation and its replacement is stopped.
  bool MarksUnknownOnAReadyNode(const PlanResult& plan) const;
  // What a scheduler pass writes of evaluations: `eval` complete (with its deployment,
  // failures and follow-ups named), a blocked one for what did not fit, older blocked
  // ones of the job cancelled, and the follow-ups (their IDs also in `followups`).
  std::vector<model::Evaluation> EvalsAfterPass(model::Evaluation eval, PlanResult& plan,
                                                std::vector<std::string>& followups) const;
  // A node's health verdicts as the servers take them: never dated after the servers'
  // clock (a future time would push a progress deadline out), and none where the
  // group's health is set by hand (health_check = "manual").
  std::vector<model::AllocClientUpdate> CheckHealthVerdicts(
      std::vector<model::AllocClientUpdate> updates) const;
  // Drops the plan's disconnect and rolling-update follow-ups that a pending evaluation
  // already covers.
  void DropCoveredFollowups(const model::Evaluation& eval, PlanResult& plan) const;
  asio::awaitable<void> HeartbeatMonitor(common::CancellationScopePtr term);
  // The periodic loop: a pass whenever jobs change or a launch comes.
  asio::awaitable<void> PeriodicLoop(common::CancellationScopePtr term);
  // Launches what is due; returns the next launch of any periodic job.
  asio::awaitable<std::optional<common::Time>> PeriodicPass(common::CancellationScopePtr term);
  // Registers `parent`'s child for `launch` and records the launch; with
  // prohibit_overlap (and not `forced`) only records it while a child is not dead.
  absl::StatusOr<EvalResponse> LaunchPeriodic(const model::Job& parent, common::Time launch,
                                              bool forced);
  asio::awaitable<absl::StatusOr<EvalResponse>> LaunchPeriodicDurably(std::string ns,
                                                                      std::string id,
                                                                      common::Time launch,
                                                                      bool forced);
  // Whether a child of `parent` is pending or running (Nomad's RunningChildren).
  bool HasLiveChildren(const model::Job& parent) const;
  // The periodic loop's next launch of each periodic job (JobKey), for the job version
  // and last launch it was computed from.
  struct PeriodicNext {
    uint64_t job_modify_index = 0;
    int64_t from = 0;  // Unix nanoseconds
    std::optional<common::Time> next;
  };
  std::map<std::string, PeriodicNext> periodic_next_;
  // Collects garbage every gc_interval (core_gc.h).
  asio::awaitable<void> GcLoop(common::CancellationScopePtr term);
  // One collection with `thresholds`, durable; returns what went.
  asio::awaitable<absl::StatusOr<Garbage>> CollectGarbage(GcThresholds thresholds);
  // The longest max_client_disconnect among the allocations meant to run on the node
  // (0 when none has one).
  common::Duration DisconnectWindow(const std::string& node_id) const;
  // Evaluates every job with allocations still running on a node that went down.
  void CreateNodeEvals(const std::string& node_id);
  // Evaluates every system and sysbatch job (a node joined or changed).
  std::vector<std::string> CreateSystemJobEvals();
  // The drain loop (node_drain.cc): one pass whenever allocations or nodes change, or
  // a drain's deadline comes, while any node drains.
  asio::awaitable<void> DrainLoop(common::CancellationScopePtr term);
  // Applies PlanDrain's decisions; returns the next force deadline.
  std::optional<common::Time> DrainPass();
  absl::StatusOr<EvalResponse> UpdateNodeDrain(const std::string& node_id,
                                               const std::optional<DrainSpec>& spec,
                                               bool mark_eligible,
                                               std::map<std::string, std::string> meta);
  // Whether the job has an evaluation queued that the worker has not taken yet.
  bool HasQueuedEval(const model::Job& job) const;

  asio::any_io_executor executor_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  ServerConfig config_;
  StateStore state_;
  metrics::Registry* metrics_ = nullptr;
  std::deque<std::string> queue_;
  std::set<std::string> queued_;  // what queue_ holds, for lookups
  common::Notifier queue_changed_;
  common::AsyncMutex durable_writes_;
  // One plan at a time on the pool: callers cannot crowd out evaluations.
  common::AsyncMutex plans_;
  bool defer_enqueue_ = false;         // inside Durably's write
  std::vector<std::string> deferred_;  // evaluations that write created
  // When each node is marked down unless it heartbeats first (TTL + grace).
  std::map<std::string, common::Time> heartbeat_deadline_;
  std::set<std::string> draining_;  // nodes with a drain strategy
  // Per active deployment, its healthy allocations when the watcher last evaluated it.
  std::map<std::string, int> deployment_healthy_seen_;
  common::Notifier drain_changed_;
  common::CancellationScopePtr stop_;  // the server's life
  common::CancellationScopePtr term_;  // the current term's (a child of stop_), or null
  bool leader_ = false;
  uint64_t term_count_ = 0;  // terms begun: a pass from an ended term is not applied
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;  // heartbeat stagger
};

}  // namespace drover::server
