// StateStore's write-through persistence and its load on start (layout in
// state_store.h, docs/state.md).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/logging.h"
#include "server/state_layout.h"
#include "server/state_store.h"
#include "state/schema.h"
#include "state/state_db.h"

namespace drover::server {

namespace {

using layout::JobRecordPrefix;
using layout::kAllocPrefix;
using layout::kEvalPrefix;
using layout::kIndexKey;
using layout::kJobPrefix;
using layout::kNodePrefix;
using layout::TableName;

std::string JobRecordKey(const model::Job& job) {
  return layout::JobRecordKey(job.namespace_, job.id, job.version);
}

// Decodes every record under `prefix` with `from_json`, naming the key on failure.
template <typename T, typename FromJson>
absl::StatusOr<std::vector<std::shared_ptr<const T>>> LoadAll(state::Store& store,
                                                              const char* prefix, const char* field,
                                                              FromJson from_json) {
  auto pairs = store.Scan(prefix);
  if (!pairs.ok())
    return pairs.status();
  std::vector<std::shared_ptr<const T>> out;
  for (const auto& [key, bytes] : *pairs) {
    auto fail = [&key](const absl::Status& s) {
      return absl::DataLossError("server state record '" + layout::Printable(key) +
                                 "' cannot be decoded: " + std::string(s.message()));
    };
    auto j = state::Decode(field, bytes);
    if (!j.ok())
      return fail(j.status());
    absl::StatusOr<T> value = from_json(*j);
    if (!value.ok())
      return fail(value.status());
    out.push_back(std::make_shared<const T>(std::move(*value)));
  }
  return out;
}

// Writes are not awaited (Flush is); a failure is logged here and reported by Flush.
state::Store::Done LogFailure() {
  return [](absl::Status s) {
    if (!s.ok())
      DROVER_LOG_ERROR("server: failed to persist state: {}", s.ToString());
  };
}

}  // namespace

void StateStore::Persist(const JobPtr& job) {
  if (store_)
    store_->PutEncoded(
        JobRecordKey(*job), [job] { return layout::EncodeRecord(*job); }, LogFailure());
}

void StateStore::Persist(const EvalPtr& eval) {
  if (store_)
    store_->PutEncoded(
        kEvalPrefix + eval->id, [eval] { return layout::EncodeRecord(*eval); }, LogFailure());
}

void StateStore::Persist(const AllocPtr& alloc) {
  if (store_)
    store_->PutEncoded(
        kAllocPrefix + alloc->id, [alloc] { return layout::EncodeRecord(*alloc); }, LogFailure());
}

void StateStore::Persist(const NodePtr& node) {
  if (store_)
    store_->PutEncoded(
        kNodePrefix + node->id, [node] { return layout::EncodeRecord(*node); }, LogFailure());
}

void StateStore::Persist(const DeploymentPtr& deployment) {
  if (store_) {
    store_->PutEncoded(
        layout::kDeploymentPrefix + deployment->id,
        [deployment] { return layout::EncodeRecord(*deployment); }, LogFailure());
  }
}

void StateStore::SaveIndexes() {
  if (!store_)
    return;
  codec::Json tables = codec::Json::object();
  for (const auto& [t, index] : table_index_)
    tables[TableName(t)] = index;
  store_->Put(kIndexKey, state::Encode("Index", {{"Index", index_}, {"Tables", tables}}),
              LogFailure());
}

void StateStore::SaveSchedulerConfig() {
  if (!store_)
    return;
  if (scheduler_config_) {
    store_->Put(layout::kSchedulerConfigKey,
                state::Encode("SchedulerConfig", codec::ToJson(*scheduler_config_)), LogFailure());
  } else {
    store_->Delete(layout::kSchedulerConfigKey, LogFailure());
  }
}

void StateStore::SaveScalingEvents(const std::string& key) {
  if (!store_)
    return;
  auto it = scaling_events_.find(key);
  if (it != scaling_events_.end()) {
    store_->Put(layout::kScalingPrefix + key,
                state::Encode("JobScalingEvents", codec::ToJson(*it->second)), LogFailure());
  } else {
    store_->Delete(layout::kScalingPrefix + key, LogFailure());
  }
}

void StateStore::SavePeriodicLaunch(const std::string& key) {
  if (!store_)
    return;
  auto it = periodic_launches_.find(key);
  if (it != periodic_launches_.end()) {
    store_->Put(layout::kPeriodicPrefix + key,
                state::Encode("PeriodicLaunch", codec::ToJson(*it->second)), LogFailure());
  } else {
    store_->Delete(layout::kPeriodicPrefix + key, LogFailure());
  }
}

void StateStore::ForgetJob(const std::string& ns, const std::string& id) {
  if (store_)
    store_->DeletePrefix(JobRecordPrefix(ns, id), LogFailure());
}

void StateStore::ForgetJobVersion(const model::Job& version) {
  if (store_)
    store_->Delete(JobRecordKey(version), LogFailure());
}

void StateStore::ForgetEval(const std::string& id) {
  if (store_)
    store_->Delete(kEvalPrefix + id, LogFailure());
}

void StateStore::ForgetAlloc(const std::string& id) {
  if (store_)
    store_->Delete(kAllocPrefix + id, LogFailure());
}

void StateStore::ForgetDeployment(const std::string& id) {
  if (store_)
    store_->Delete(layout::kDeploymentPrefix + id, LogFailure());
}

void StateStore::ForgetNode(const std::string& id) {
  if (store_)
    store_->Delete(kNodePrefix + id, LogFailure());
}

absl::Status StateStore::Attach(std::unique_ptr<state::Store> store) {
  store_ = std::move(store);
  resave_on_failure_ = true;
  failed_writes_seen_ = store_->stats().failed;
  publish_ = false;  // what was there before: not changes the event stream tells
  absl::Status loaded = Load();
  publish_ = true;
  if (absl::Status s = loaded; !s.ok()) {
    // Nothing half-loaded stays behind (the caller may try again with another DB).
    store_.reset();
    ClearObjects();
    index_ = 1;
    for (auto& [t, i] : table_index_)
      i = 1;
    return s;
  }
  return absl::OkStatus();
}

absl::Status StateStore::LoadOperatorRecords() {
  auto scheduler = store_->Get(layout::kSchedulerConfigKey);
  if (!scheduler.ok())
    return scheduler.status();
  if (absl::Status s = ApplySchedulerConfigRecord(*scheduler); !s.ok()) {
    return absl::DataLossError("server state record 'meta/scheduler' cannot be decoded: " +
                               std::string(s.message()));
  }

  auto deployments = store_->Scan(layout::kDeploymentPrefix);
  if (!deployments.ok())
    return deployments.status();
  for (const auto& [key, bytes] : *deployments) {
    const std::string id = key.substr(std::string_view(layout::kDeploymentPrefix).size());
    if (absl::Status s = ApplyDeploymentRecord(id, bytes); !s.ok()) {
      return absl::DataLossError("server state record '" + layout::Printable(key) +
                                 "' cannot be decoded: " + std::string(s.message()));
    }
  }

  for (const char* prefix : {layout::kScalingPrefix, layout::kPeriodicPrefix}) {
    auto records = store_->Scan(prefix);
    if (!records.ok())
      return records.status();
    for (const auto& [key, bytes] : *records) {
      const Record r{key, bytes};
      absl::Status s =
          prefix == layout::kScalingPrefix ? ApplyScalingRecord(r) : ApplyPeriodicRecord(r);
      if (!s.ok()) {
        return absl::DataLossError("server state record '" + layout::Printable(key) +
                                   "' cannot be decoded: " + std::string(s.message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status StateStore::Load() {
  auto index = store_->Get(kIndexKey);
  if (!index.ok())
    return index.status();
  if (index->has_value()) {
    auto meta = state::Decode("Index", **index);
    const auto bad = [](const std::string& why) {
      return absl::DataLossError("server state record 'meta/index' cannot be decoded: " + why);
    };
    if (!meta.ok())
      return bad(std::string(meta.status().message()));
    if (!meta->is_object() || !(*meta)["Index"].is_number_unsigned() ||
        !(*meta)["Tables"].is_object())
      return bad("unexpected shape");
    index_ = (*meta)["Index"].get<uint64_t>();
    for (auto& [t, i] : table_index_) {
      const codec::Json& v = (*meta)["Tables"][TableName(t)];
      // A state written before deployments existed has no index for them.
      if (t == Table::kDeployments && v.is_null())
        continue;
      if (!v.is_number_unsigned())
        return bad(std::string("no index for table ") + TableName(t));
      i = v.get<uint64_t>();
    }
  }

  auto jobs = LoadAll<model::Job>(*store_, kJobPrefix, "Job", codec::JobFromJson);
  if (!jobs.ok())
    return jobs.status();
  // Keys sort each job's versions oldest first; the list is kept newest first.
  for (const JobPtr& job : *jobs) {
    const std::string key = JobKey(job->namespace_, job->id);
    auto& versions = job_versions_[key];
    versions.insert(versions.begin(), job);
    jobs_[key] = versions.front();
  }
  if (absl::Status s = LoadOperatorRecords(); !s.ok())
    return s;
  auto evals =
      LoadAll<model::Evaluation>(*store_, kEvalPrefix, "Evaluation", codec::EvaluationFromJson);
  if (!evals.ok())
    return evals.status();
  for (const EvalPtr& e : *evals) {
    evals_[e->id] = e;
    evals_by_job_[JobKey(e->namespace_, e->job_id)].insert(e->id);
  }
  auto allocs =
      LoadAll<model::Allocation>(*store_, kAllocPrefix, "Allocation", codec::AllocationFromJson);
  if (!allocs.ok())
    return allocs.status();
  for (const AllocPtr& a : *allocs) {
    allocs_[a->id] = a;
    allocs_by_job_[JobKey(a->namespace_, a->job_id)].insert(a->id);
    allocs_by_node_[a->node_id].insert(a->id);
    uint64_t& node_index = node_allocs_index_[a->node_id];
    node_index = std::max(node_index, a->alloc_modify_index);
  }
  auto nodes = LoadAll<model::Node>(*store_, kNodePrefix, "Node", codec::NodeFromJson);
  if (!nodes.ok())
    return nodes.status();
  for (const NodePtr& n : *nodes)
    nodes_[n->id] = n;
  // Indexes never go back, even if the last write of meta/index was lost: each table's
  // is at least the highest index among its records.
  const auto raise = [this](Table t, uint64_t seen) {
    table_index_[t] = std::max(table_index_[t], seen);
    index_ = std::max(index_, seen);
  };
  for (const auto& [key, versions] : job_versions_) {
    for (const JobPtr& j : versions)
      raise(Table::kJobs, std::max({j->modify_index, j->job_modify_index, j->create_index}));
  }
  for (const auto& [id, e] : evals_)
    raise(Table::kEvals, std::max(e->modify_index, e->create_index));
  for (const auto& [id, a] : allocs_)
    raise(Table::kAllocs, std::max({a->modify_index, a->alloc_modify_index, a->create_index}));
  for (const auto& [id, n] : nodes_)
    raise(Table::kNodes, std::max(n->modify_index, n->create_index));
  if (scheduler_config_)
    index_ = std::max(index_, scheduler_config_->modify_index);
  DROVER_LOG_INFO(
      "server: loaded {} jobs, {} evaluations, {} allocations, {} nodes, {} deployments (index {})",
      jobs_.size(), evals_.size(), allocs_.size(), nodes_.size(), deployments_.size(), index_);
  return absl::OkStatus();
}

void StateStore::SaveAll() {
  for (const auto& [key, versions] : job_versions_) {
    for (const JobPtr& j : versions)
      Persist(j);
  }
  for (const auto& [id, e] : evals_)
    Persist(e);
  for (const auto& [id, a] : allocs_)
    Persist(a);
  for (const auto& [id, n] : nodes_)
    Persist(n);
  for (const auto& [id, d] : deployments_)
    Persist(d);
  SaveSchedulerConfig();  // or its delete, when none is set
  for (const auto& [key, events] : scaling_events_)
    SaveScalingEvents(key);
  for (const auto& [key, launch] : periodic_launches_)
    SavePeriodicLaunch(key);
  SaveIndexes();
}

void StateStore::ResaveAll() {
  SaveAll();
  // A purge whose delete failed: its versions are still on disk.
  if (auto on_disk = store_->Scan(kJobPrefix); on_disk.ok()) {
    std::set<std::string> live;
    for (const auto& [key, versions] : job_versions_) {
      for (const JobPtr& j : versions)
        live.insert(JobRecordKey(*j));
    }
    for (const auto& [key, bytes] : *on_disk) {
      if (!live.contains(key))
        store_->Delete(key, LogFailure());
    }
  }
  // Deployments that went, or whose delete failed.
  if (auto on_disk = store_->Scan(layout::kDeploymentPrefix); on_disk.ok()) {
    for (const auto& [key, bytes] : *on_disk) {
      if (!deployments_.contains(key.substr(std::string_view(layout::kDeploymentPrefix).size())))
        store_->Delete(key, LogFailure());
    }
  }
  // Scaling events and launch records of jobs that went, or whose delete failed.
  if (auto on_disk = store_->Scan(layout::kScalingPrefix); on_disk.ok()) {
    for (const auto& [key, bytes] : *on_disk) {
      if (!scaling_events_.contains(key.substr(std::string_view(layout::kScalingPrefix).size())))
        store_->Delete(key, LogFailure());
    }
  }
  if (auto on_disk = store_->Scan(layout::kPeriodicPrefix); on_disk.ok()) {
    for (const auto& [key, bytes] : *on_disk) {
      if (!periodic_launches_.contains(
              key.substr(std::string_view(layout::kPeriodicPrefix).size())))
        store_->Delete(key, LogFailure());
    }
  }
}

asio::awaitable<absl::Status> StateStore::Flush() {
  // Held across the wait: the writer may be replaced meanwhile (a leader's term ends).
  if (unsettled_) {
    co_return absl::UnavailableError(
        "this server's leadership ended and its view is being loaded again from etcd");
  }
  const std::shared_ptr<state::Store> store = store_;
  if (!store)
    co_return absl::OkStatus();
  co_await store->FlushAsync();
  if (store != store_) {
    co_return absl::UnavailableError(
        "the change could not be made durable in etcd: this server stopped leading the cluster "
        "before etcd confirmed it (see /v1/status/leader)");
  }
  if (store->stats().failed == failed_writes_seen_)
    co_return absl::OkStatus();
  if (!resave_on_failure_) {
    // A replicated writer: the leader gives up its term, and memory, now ahead of
    // etcd, is loaded again from it (docs/ha.md).
    co_return absl::UnavailableError(
        "failed to write the server state to etcd (see the agent log); this server gives up "
        "leadership");
  }
  // A commit failed since the disk was last known to match memory (whichever request
  // it served): write everything again — what is already on disk costs nothing, the
  // store drops it — and see whether that reached the disk. Until it does, every Flush
  // fails, so no request is answered as durable while the disk lags behind.
  const uint64_t before = store->stats().failed;
  ResaveAll();
  co_await store->FlushAsync();
  if (store->stats().failed != before) {
    co_return absl::UnavailableError(
        "failed to persist the server state (writes to its state DB fail; see the agent log)");
  }
  failed_writes_seen_ = before;
  co_return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<state::Store>> OpenServerStore(const std::string& data_dir) {
  const state::Schema schema{.name = "server state DB", .version = layout::kSchemaVersion};
  auto backend =
      state::OpenVersionedLmdb(std::filesystem::path(data_dir) / "server" / "state.db", schema);
  if (!backend.ok())
    return backend.status();
  return std::make_unique<state::Store>(std::move(*backend));
}

}  // namespace drover::server
