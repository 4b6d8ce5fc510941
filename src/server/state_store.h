// The server's in-memory state: jobs (with versions), evaluations, allocations and
// nodes, each table stamped with the global index of its last change (Nomad's Raft
// index, exposed as X-Nomad-Index and used by blocking queries).
//
// Objects are stored as shared_ptr<const T>: readers get cheap immutable snapshots and
// every write replaces an object instead of mutating it. Lives on the control loop;
// not thread-safe. (Persistence to LMDB and an etcd backend come with their issues;
// this class is the seam.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/clock.h"
#include "model/allocation.h"
#include "model/evaluation.h"
#include "model/job.h"
#include "model/node.h"

namespace drover::server {

enum class Table { kJobs, kEvals, kAllocs, kNodes };

using JobPtr = std::shared_ptr<const model::Job>;
using EvalPtr = std::shared_ptr<const model::Evaluation>;
using AllocPtr = std::shared_ptr<const model::Allocation>;
using NodePtr = std::shared_ptr<const model::Node>;

class StateStore {
 public:
  StateStore(asio::any_io_executor executor, common::Clock& clock);
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  uint64_t LatestIndex() const { return index_; }
  uint64_t TableIndex(Table t) const;

  // Blocking query: returns at once when `min_index` is 0 or some table in `tables` has
  // an index above it; otherwise waits until one does or `max_wait` passes. Returns the
  // highest index among `tables` (never 0).
  asio::awaitable<uint64_t> BlockUntil(std::vector<Table> tables, uint64_t min_index,
                                       common::Duration max_wait);

  // Jobs. UpsertJob assigns Version (previous + 1 when the spec changed), indexes and
  // SubmitTime; returns the stored job.
  JobPtr UpsertJob(model::Job job);
  JobPtr GetJob(const std::string& ns, const std::string& id) const;
  // `ns` "*" lists every namespace. Sorted by ID.
  std::vector<JobPtr> ListJobs(const std::string& ns, const std::string& prefix) const;
  std::vector<JobPtr> JobVersions(const std::string& ns, const std::string& id) const;
  // Removes the job and its versions (purge). Returns false if absent.
  bool DeleteJob(const std::string& ns, const std::string& id);
  model::JobSummary JobSummary(const model::Job& job) const;

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
  std::vector<AllocPtr> ListAllocs(const std::string& ns, const std::string& prefix) const;
  std::vector<AllocPtr> AllocsByJob(const std::string& ns, const std::string& job_id) const;
  std::vector<AllocPtr> AllocsByNode(const std::string& node_id) const;
  std::vector<AllocPtr> AllocsByEval(const std::string& eval_id) const;

  // Nodes.
  NodePtr UpsertNode(model::Node node);
  NodePtr GetNode(const std::string& id) const;
  std::vector<NodePtr> ListNodes(const std::string& prefix) const;

 private:
  static std::string JobKey(const std::string& ns, const std::string& id) { return ns + '\0' + id; }
  uint64_t Bump(Table t);
  // Recomputes the stored status of a job from its allocs and evals (Nomad's rules).
  void RefreshJobStatus(const std::string& ns, const std::string& job_id);

  asio::any_io_executor executor_;
  common::Clock& clock_;
  uint64_t index_ = 1;
  std::map<Table, uint64_t> table_index_;
  // Woken (cancelled) on every commit; blocking queries wait on it.
  asio::steady_timer changed_;

  std::map<std::string, JobPtr> jobs_;
  std::map<std::string, std::vector<JobPtr>> job_versions_;
  std::map<std::string, EvalPtr> evals_;
  std::map<std::string, AllocPtr> allocs_;
  // Secondary indexes (ids, sorted like the primary tables). An allocation's job and
  // node and an evaluation's job never change, and nothing is deleted yet, so entries
  // are only ever added. They keep per-job and per-node lookups — done on every write
  // (job status) and every client wake-up — from scanning whole tables.
  std::map<std::string, std::set<std::string>> allocs_by_job_;
  std::map<std::string, std::set<std::string>> allocs_by_node_;
  std::map<std::string, std::set<std::string>> evals_by_job_;
  std::map<std::string, NodePtr> nodes_;
};

}  // namespace drover::server
