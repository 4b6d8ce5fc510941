// The server's in-memory state: jobs (with versions), evaluations, allocations and
// nodes, each table stamped with the global index of its last change (Nomad's Raft
// index, exposed as X-Nomad-Index and used by blocking queries).
//
// Objects are stored as shared_ptr<const T>: readers get cheap immutable snapshots and
// every write replaces an object instead of mutating it. Lives on the control loop;
// not thread-safe.
//
// Durability (optional, docs/state.md): once a state::Store is attached, every change
// is written through to it (queued on the control loop, group-committed by the store's
// writer thread), and Flush() waits until what changed so far is on disk. Layout:
//
//   meta/version                     "1" (raw)
//   meta/index                       {Index, Tables}
//   meta/scheduler                   {SchedulerConfig}  once an operator set one
//   jobs/<ns>\0<id>\0<version:020>   {Job}   every version; the highest is the job
//   evals/<id>                       {Evaluation}
//   allocs/<id>                      {Allocation}
//   nodes/<id>                       {Node}
//   scaling/<ns>\0<id>               {JobScalingEvents}  a job's scaling events
//   deployments/<id>                 {Deployment}
//   periodic/<ns>\0<id>              {PeriodicLaunch}  a periodic job's last launch
//
// With several servers (docs/ha.md) the same records live in etcd: the leader writes
// through to an etcd-backed state::Store (SetWriter), and every other server applies
// what the leader wrote as it arrives from a watch (ApplyRecords).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/clock.h"
#include "common/event.h"
#include "model/allocation.h"
#include "model/evaluation.h"
#include "model/job.h"
#include "model/node.h"
#include "model/server_types.h"
#include "state/store.h"

namespace drover::server {

using model::AllocPtr;
using model::DeploymentPtr;
using model::EvalPtr;
using model::JobPtr;
using model::NodePtr;
using model::Table;

class StateStore {
 public:
  StateStore(asio::any_io_executor executor, common::Clock& clock);
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // Loads what `store` holds (it must be empty or hold a state of this schema
  // version), then writes every later change through to it. Call once, before use.
  // A record that cannot be decoded fails the whole load, naming its key: a server
  // must not run on part of its state.
  absl::Status Attach(std::unique_ptr<state::Store> store);
  bool durable() const { return store_ != nullptr; }
  // Resolves once every change made before the call is on disk (at once without a
  // store). After a failed commit it writes the whole state again; an error while
  // that does not succeed.
  asio::awaitable<absl::Status> Flush();

  // Replication (docs/ha.md). A record as etcd holds it: its key in the layout above,
  // and its bytes (nullopt: deleted).
  struct Record {
    std::string key;
    std::optional<std::string> value;
  };
  // Applies what the leader wrote: each record replaces (or removes) what its key held.
  // Indexes follow meta/index and never go back. A value that cannot be decoded is
  // skipped, logged once with its key and counted in skipped_records(): one bad record
  // must not stop a server that only serves reads. Wakes blocking queries.
  void ApplyRecords(const std::vector<Record>& records);
  // Forgets every object and loads `records` (the whole state), as when a leader's term
  // ends: its indexes and its nodes' allocation indexes are taken from the records
  // (what it held beyond them never committed), and every waiting node looks again.
  void ResetTo(const std::vector<Record>& records);
  // Until the next ResetTo, nothing this store holds counts as durable: Flush fails (a
  // leader whose term ended may hold writes that never committed).
  void Unsettle() { unsettled_ = true; }
  // Writes every later change through to `store`, which already holds this state (no
  // load); nullptr stops that. Returns the writer it replaces.
  std::shared_ptr<state::Store> SetWriter(std::shared_ptr<state::Store> store);
  uint64_t skipped_records() const { return skipped_records_; }

  // Operator snapshots (codec/snapshot.h, docs/ha.md): every record as written through,
  // meta/index included, from the objects held now. The returned function does the
  // encoding (run it on the pool): it holds only immutable objects.
  std::function<std::vector<model::StateRecord>()> SnapshotRecords() const;
  // Replaces the whole state with `records` and writes that through, the old records
  // deleted first. Every record must decode: otherwise InvalidArgument naming one that
  // does not, and nothing changes. Indexes go on above both the current ones and the
  // snapshot's, so that blocking queries see the change.
  absl::Status Restore(const std::vector<model::StateRecord>& records);

  uint64_t LatestIndex() const { return index_; }
  uint64_t TableIndex(Table t) const;

  // Blocking query: returns at once when `min_index` is 0 or some table in `tables` has
  // an index above it; otherwise waits until one does or `max_wait` passes. Returns the
  // highest index among `tables` (never 0).
  asio::awaitable<uint64_t> BlockUntil(std::vector<Table> tables, uint64_t min_index,
                                       common::Duration max_wait);

  // Jobs. UpsertJob assigns Version (previous + 1 when the spec changed), indexes and
  // SubmitTime; returns the stored job. The newest tracked_versions() versions are kept,
  // and the newest stable one besides (server.job_tracked_versions).
  JobPtr UpsertJob(model::Job job);
  // What UpsertJob would store for `job` now, without storing it (a plan's view).
  model::Job PreviewJob(model::Job job) const;
  // Marks one version stable or not (JobStability). NotFound when it is not kept.
  absl::StatusOr<JobPtr> SetJobStability(const std::string& ns, const std::string& id,
                                         uint64_t version, bool stable);
  void set_tracked_versions(size_t n) { tracked_versions_ = std::max<size_t>(n, 1); }
  size_t tracked_versions() const { return tracked_versions_; }
  JobPtr GetJob(const std::string& ns, const std::string& id) const;
  // `ns` "*" lists every namespace. Sorted by ID.
  std::vector<JobPtr> ListJobs(const std::string& ns, const std::string& prefix) const;
  std::vector<JobPtr> JobVersions(const std::string& ns, const std::string& id) const;
  // Removes the job and its versions (purge). Returns false if absent.
  bool DeleteJob(const std::string& ns, const std::string& id);
  model::JobSummary JobSummary(const model::Job& job) const;

  // Scaling events (POST /v1/job/:id/scale): each group keeps its newest
  // JobScalingEvents::kMaxScalingEvents. They go with the job (purge, collection).
  // Returns the event as stored (CreateIndex set).
  model::ScalingEvent AddScalingEvent(const std::string& ns, const std::string& job_id,
                                      const std::string& group, model::ScalingEvent event);
  // Null when the job has none.
  std::shared_ptr<const model::JobScalingEvents> ScalingEvents(const std::string& ns,
                                                               const std::string& job_id) const;

  // Periodic and parameterized jobs (state_periodic.cc). The jobs that launch on their
  // own schedule (Job::IsPeriodicActive); a scan of the jobs table.
  std::vector<JobPtr> PeriodicJobs() const;
  // The children a periodic or parameterized job launched (ParentID `parent`), by ID.
  std::vector<JobPtr> ChildJobs(const std::string& ns, const std::string& parent) const;
  // A periodic job's last launch (model::PeriodicLaunch); none before its first
  // registration as a periodic job. The record goes with the job.
  std::optional<model::PeriodicLaunch> LastPeriodicLaunch(const std::string& ns,
                                                          const std::string& job_id) const;
  void SetPeriodicLaunch(const std::string& ns, const std::string& job_id, int64_t launch);
  // Puts back what LastPeriodicLaunch() was (undoing a write that was not durable).
  void RestorePeriodicLaunch(const std::string& ns, const std::string& job_id,
                             const std::optional<model::PeriodicLaunch>& before);

  // The change feed (GET /v1/event/stream, docs/api.md#event-stream): every change
  // to a job, evaluation, allocation, deployment or node, as an event numbered in the
  // order it was made (from 1) and stamped with its index. The newest max_events() are
  // kept (server.event_buffer_size); a reader that falls further behind is told so by
  // EventsFrom.
  static constexpr size_t kDefaultMaxEvents = 100;
  void set_max_events(size_t n);
  size_t max_events() const { return max_events_; }
  // The number the next event will have.
  uint64_t next_event_seq() const { return first_event_seq_ + events_.size(); }
  // Up to `max` events numbered from `seq` on; OutOfRange when `seq` is older than the
  // oldest kept.
  absl::StatusOr<std::vector<model::StateEventPtr>> EventsFrom(uint64_t seq, size_t max) const;
  // The number of the oldest kept event with an index at least `index` (or the next
  // event's when none has).
  uint64_t EventSeqAtIndex(uint64_t index) const;
  // Forgets every event, so that every reader is told it fell behind (EventsFrom) and
  // starts over: after a write was undone, or the whole state replaced (ResetTo).
  void ResetEventFeed();

  // The scheduler configuration an operator set (none until then).
  const std::optional<model::SchedulerConfig>& scheduler_config() const {
    return scheduler_config_;
  }
  // Stores `config` with its indexes (CreateIndex the first time); returns it.
  model::SchedulerConfig SetSchedulerConfig(model::SchedulerConfig config);
  // Puts back what scheduler_config() was (undoing a write that was not durable).
  void RestoreSchedulerConfig(std::optional<model::SchedulerConfig> before);

  // Deployments (state_deployments.cc). UpsertDeployment assigns the indexes and times
  // and returns the stored deployment. The counters of each group's DeploymentState
  // (PlacedAllocs, PlacedCanaries, HealthyAllocs, UnhealthyAllocs, RequireProgressBy)
  // follow the deployment's allocations as they are upserted and as clients report
  // their health: the state keeps them, whoever wrote the allocation.
  DeploymentPtr UpsertDeployment(model::Deployment deployment);
  DeploymentPtr GetDeployment(const std::string& id) const;
  // `ns` "*" lists every namespace. Sorted by ID.
  std::vector<DeploymentPtr> ListDeployments(const std::string& ns,
                                             const std::string& prefix) const;
  // Newest (highest CreateIndex) first.
  std::vector<DeploymentPtr> DeploymentsByJob(const std::string& ns,
                                              const std::string& job_id) const;
  // Those with status "running" (not paused, not ended): what the watcher looks at.
  std::vector<DeploymentPtr> RunningDeployments() const;
  // The newest of DeploymentsByJob, or null.
  DeploymentPtr LatestDeployment(const std::string& ns, const std::string& job_id) const;
  // Puts `before` back for deployment `id` (null: removes it), undoing a write that
  // could not be made durable.
  void RestoreDeployment(const std::string& id, DeploymentPtr before);

  // Evaluations.
  void UpsertEvals(std::vector<model::Evaluation> evals);
  EvalPtr GetEval(const std::string& id) const;
  std::vector<EvalPtr> ListEvals(const std::string& ns, const std::string& prefix) const;
  std::vector<EvalPtr> EvalsByJob(const std::string& ns, const std::string& job_id) const;

  // Allocations. Upserts from the scheduler set CreateIndex (new), ModifyIndex and
  // AllocModifyIndex (the index the client diffs on); for existing allocations the
  // client-owned fields (status, description, task states) are kept as stored.
  void UpsertAllocs(std::vector<model::Allocation> allocs);
  // Client-owned fields only; AllocModifyIndex stays (the client caused the change).
  // Unknown allocations are skipped and returned as NotFound-able ids.
  std::vector<std::string> UpdateAllocsFromClient(
      const std::vector<model::AllocClientUpdate>& updates);
  AllocPtr GetAlloc(const std::string& id) const;
  // The index of the server's last change to a node's allocations (placed, updated,
  // stopped, put back; not the node's own status reports): 0 for none. A node's long
  // poll waits on it, so it wakes for its own allocations only.
  uint64_t NodeAllocsIndex(const std::string& node_id) const;
  // Returns once NodeAllocsIndex(node_id) > min_index, or after max_wait.
  asio::awaitable<void> WaitNodeAllocs(std::string node_id, uint64_t min_index,
                                       common::Duration max_wait);
  std::vector<AllocPtr> ListAllocs(const std::string& ns, const std::string& prefix) const;
  std::vector<AllocPtr> AllocsByJob(const std::string& ns, const std::string& job_id) const;
  std::vector<AllocPtr> AllocsByNode(const std::string& node_id) const;
  std::vector<AllocPtr> AllocsByEval(const std::string& eval_id) const;

  // Undoing a write that could not be made durable (Server's durable writes): what a
  // job was before, put back; an evaluation removed; allocations put back as they were
  // unless something changed them since. Each bumps its table's index.
  struct JobSnapshot {
    std::string ns;
    std::string id;
    JobPtr job;  // null: there was none
    std::vector<JobPtr> versions;
    std::shared_ptr<const model::JobScalingEvents> scaling_events;
    std::optional<model::PeriodicLaunch> periodic_launch;
  };
  JobSnapshot SnapshotJob(const std::string& ns, const std::string& id) const;
  void RestoreJob(const JobSnapshot& before);
  void RemoveEval(const std::string& id);
  // `before[i]` replaces `after[i]` where the stored allocation is still `after[i]`.
  void RestoreAllocs(const std::vector<AllocPtr>& before, const std::vector<AllocPtr>& after);

  // Garbage collection (core_gc.h): removes these allocations, evaluations, jobs (every
  // version) and nodes, durably, and wakes the nodes whose allocations went. Ids that
  // are gone already are skipped.
  struct Removal {
    std::vector<std::string> allocs;
    std::vector<std::string> evals;
    std::vector<std::pair<std::string, std::string>> jobs;  // (namespace, id)
    std::vector<std::string> nodes;
    std::vector<std::string> deployments;
    bool empty() const {
      return allocs.empty() && evals.empty() && jobs.empty() && nodes.empty() &&
             deployments.empty();
    }
  };
  void Remove(const Removal& removal);

  // Nodes.
  // Assigns the indexes, and its own index to each event not stored before.
  NodePtr UpsertNode(model::Node node);
  NodePtr GetNode(const std::string& id) const;
  std::vector<NodePtr> ListNodes(const std::string& prefix) const;

 private:
  static std::string JobKey(const std::string& ns, const std::string& id) { return ns + '\0' + id; }
  uint64_t Bump(Table t);
  // A write outside the tables (the scheduler configuration): the global index only.
  uint64_t BumpGlobal();
  // Sets the server-managed fields UpsertJob sets, for a write at `index`.
  void AssignVersion(model::Job& job, uint64_t index) const;
  // A change: published on the change feed and written through.
  template <typename Ptr>
  void Save(const Ptr& object) {
    Publish(object);
    Persist(object);
  }
  // Write-through (no-ops without a store).
  void Persist(const JobPtr& job);
  void Persist(const EvalPtr& eval);
  void Persist(const AllocPtr& alloc);
  void Persist(const NodePtr& node);
  void Persist(const DeploymentPtr& deployment);
  // The change feed (state_events.cc); no-ops while `publish_` is off (loads).
  void Publish(const JobPtr& job, const char* type = nullptr);
  void Publish(const EvalPtr& eval);
  void Publish(const AllocPtr& alloc);
  void Publish(const NodePtr& node);
  void Publish(const DeploymentPtr& deployment);
  void Append(model::StateEvent event);
  void SaveIndexes();
  void SaveSchedulerConfig();
  void SaveScalingEvents(const std::string& key);  // JobKey; deletes the record when none
  // Drops a job's scaling events (the job went).
  void DropScalingEvents(const std::string& ns, const std::string& id);
  absl::Status ApplyScalingRecord(const Record& r);
  void SavePeriodicLaunch(const std::string& key);  // JobKey; deletes the record when none
  void DropPeriodicLaunch(const std::string& ns, const std::string& id);
  absl::Status ApplyPeriodicRecord(const Record& r);
  absl::Status ApplySchedulerConfigRecord(const std::optional<std::string>& value);
  void ForgetJob(const std::string& ns, const std::string& id);
  void ForgetJobVersion(const model::Job& version);
  // Drops the oldest of `versions` (newest first) beyond tracked_versions_, except the
  // newest stable one.
  void TrimVersions(std::vector<JobPtr>& versions);
  void ForgetEval(const std::string& id);
  void ForgetAlloc(const std::string& id);
  void ForgetNode(const std::string& id);
  void ForgetDeployment(const std::string& id);
  // Drops a deployment from memory and the store (no index bump).
  void EraseDeployment(const std::string& id);
  // Stores `d` under its ID with its indexes (by job, running).
  void PutDeployment(const DeploymentPtr& d);
  // Keeps the counters of `after`'s deployment (if it has one that is active) in step
  // with the change from `before` (null: a new allocation). Returns whether it changed
  // one.
  bool TrackDeploymentAlloc(const model::Allocation* before, const model::Allocation& after);
  // After a write at `index` whose allocations changed deployments (`changed`): the
  // deployments table's index is that write's.
  void DeploymentsChanged(bool changed, uint64_t index);
  absl::Status ApplyDeploymentRecord(const std::string& id,
                                     const std::optional<std::string>& value);
  // Drops `id` from index[key], and the key once its set is empty.
  static void Unindex(std::map<std::string, std::set<std::string>>& index, const std::string& key,
                      const std::string& id);
  // Queues every record again (after a failed commit) and deletes job versions that
  // are gone from memory.
  void ResaveAll();
  // Queues every record and the indexes.
  void SaveAll();
  absl::Status Load();
  // Load's part for what operators and the scaling API wrote: the scheduler
  // configuration and the jobs' scaling events.
  absl::Status LoadOperatorRecords();
  // Drops every object (indexes stay).
  void ClearObjects();
  // ApplyRecords for one record; false when it could not be decoded.
  bool ApplyRecord(const Record& record);
  void ApplyJobRecord(const std::string& key, JobPtr job);
  // One table's record (nullopt: deleted); an error when it cannot be applied.
  absl::Status ApplyJobRecordBytes(const Record& r);
  absl::Status ApplyEvalRecord(const std::string& id, const std::optional<std::string>& value);
  absl::Status ApplyAllocRecord(const std::string& id, const std::optional<std::string>& value);
  absl::Status ApplyNodeRecord(const std::string& id, const std::optional<std::string>& value);
  void ApplyIndexRecord(const std::string& value);
  // Raises `t`'s index (and the global one) to at least `seen`.
  void RaiseIndex(Table t, uint64_t seen);
  // Records a change to the node's allocations at `index` and wakes its waiters.
  void NodeAllocsChanged(const std::string& node_id, uint64_t index);
  bool NodeDisconnected(const std::string& node_id) const;
  // Recomputes the stored status of a job from its allocs and evals (Nomad's rules).
  void RefreshJobStatus(const std::string& ns, const std::string& job_id);

  asio::any_io_executor executor_;
  common::Clock& clock_;
  uint64_t index_ = 1;
  std::map<Table, uint64_t> table_index_;
  // Woken (cancelled) on every commit; blocking queries wait on it.
  asio::steady_timer changed_;

  std::map<std::string, JobPtr> jobs_;
  std::map<std::string, std::vector<JobPtr>> job_versions_;  // newest first
  size_t tracked_versions_ = 6;
  size_t max_events_ = kDefaultMaxEvents;
  std::optional<model::SchedulerConfig> scheduler_config_;
  std::map<std::string, std::shared_ptr<const model::JobScalingEvents>> scaling_events_;   // JobKey
  std::map<std::string, std::shared_ptr<const model::PeriodicLaunch>> periodic_launches_;  // JobKey
  std::map<std::string, EvalPtr> evals_;
  std::map<std::string, AllocPtr> allocs_;
  // Secondary indexes (ids, sorted like the primary tables). An allocation's job and
  // node and an evaluation's job never change: entries are added with the object and
  // removed with it (an empty set goes too). They keep per-job and per-node lookups —
  // done on every write (job status) and every client wake-up — from scanning whole
  // tables.
  std::map<std::string, std::set<std::string>> allocs_by_job_;
  std::map<std::string, std::set<std::string>> allocs_by_node_;
  std::map<std::string, std::set<std::string>> evals_by_job_;
  std::map<std::string, NodePtr> nodes_;
  std::map<std::string, DeploymentPtr> deployments_;
  std::map<std::string, std::set<std::string>> deployments_by_job_;  // JobKey -> ids
  std::set<std::string> running_deployments_;  // status "running": the watcher's work
  std::map<std::string, uint64_t> node_allocs_index_;
  // Set by the node's next change, then dropped: later waiters get a fresh one.
  std::map<std::string, std::shared_ptr<common::Event>> node_allocs_changed_;

  // Shared with a Flush in progress, which may outlive a change of writer.
  std::shared_ptr<state::Store> store_;
  // The store's failed commits when the disk was last known to match memory.
  uint64_t failed_writes_seen_ = 0;
  // After a failed commit: write everything again (a local DB), or fail every Flush
  // until a new writer comes (etcd: the leader steps down).
  bool resave_on_failure_ = true;
  bool unsettled_ = false;
  uint64_t skipped_records_ = 0;
  std::deque<model::StateEventPtr> events_;  // the change feed, oldest first
  uint64_t first_event_seq_ = 1;
  bool publish_ = true;
  std::set<std::string> logged_bad_keys_;  // each bad record is logged once
};

// Whether two job versions differ in anything a user specified (server-managed fields
// are ignored), i.e. whether registering `b` over `a` makes a new version.
bool JobSpecChanged(const model::Job& a, const model::Job& b);

// The server's state DB: `<data_dir>/server/state.db` (0600, its dir 0700), opened and
// checked for its schema version (a newer one is refused with a clear message).
absl::StatusOr<std::unique_ptr<state::Store>> OpenServerStore(const std::string& data_dir);

}  // namespace drover::server
