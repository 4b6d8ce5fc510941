// StateStore's write-through persistence and its load on start (layout in
// state_store.h, docs/state.md).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/logging.h"
#include "server/state_store.h"
#include "state/lmdb_backend.h"
#include "state/schema.h"
#include "state/state_db.h"

namespace drover::server {

namespace {

constexpr int kServerSchemaVersion = 1;
constexpr char kIndexKey[] = "meta/index";
constexpr char kJobPrefix[] = "jobs/";
constexpr char kEvalPrefix[] = "evals/";
constexpr char kAllocPrefix[] = "allocs/";
constexpr char kNodePrefix[] = "nodes/";

// Namespaces and ids may hold '/', never NUL.
std::string JobRecordPrefix(const std::string& ns, const std::string& id) {
  std::string key = kJobPrefix;
  key += ns;
  key += '\0';
  key += id;
  key += '\0';
  return key;
}

std::string JobRecordKey(const model::Job& job) {
  char version[24];
  std::snprintf(version, sizeof(version), "%020" PRIu64, job.version);
  return JobRecordPrefix(job.namespace_, job.id) + version;
}

const char* TableName(Table t) {
  switch (t) {
    case Table::kJobs:
      return "jobs";
    case Table::kEvals:
      return "evals";
    case Table::kAllocs:
      return "allocs";
    case Table::kNodes:
      return "nodes";
  }
  return "unknown";
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
      std::string printable = key;
      std::replace(printable.begin(), printable.end(), '\0', '/');
      return absl::DataLossError("server state record '" + printable +
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

void StateStore::Save(const JobPtr& job) {
  if (store_)
    store_->Put(JobRecordKey(*job), state::Encode("Job", codec::ToJson(*job)), LogFailure());
}

void StateStore::Save(const EvalPtr& eval) {
  if (store_)
    store_->Put(kEvalPrefix + eval->id, state::Encode("Evaluation", codec::ToJson(*eval)),
                LogFailure());
}

void StateStore::Save(const AllocPtr& alloc) {
  if (store_)
    store_->Put(kAllocPrefix + alloc->id, state::Encode("Allocation", codec::ToJson(*alloc)),
                LogFailure());
}

void StateStore::Save(const NodePtr& node) {
  if (store_)
    store_->Put(kNodePrefix + node->id, state::Encode("Node", codec::ToJson(*node)), LogFailure());
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

void StateStore::ForgetJob(const std::string& ns, const std::string& id) {
  if (store_)
    store_->DeletePrefix(JobRecordPrefix(ns, id), LogFailure());
}

absl::Status StateStore::Attach(std::unique_ptr<state::Store> store) {
  store_ = std::move(store);
  failed_writes_seen_ = store_->stats().failed;
  if (absl::Status s = Load(); !s.ok()) {
    store_.reset();
    return s;
  }
  return absl::OkStatus();
}

absl::Status StateStore::Load() {
  auto index = store_->Get(kIndexKey);
  if (!index.ok())
    return index.status();
  if (!index->has_value())
    return absl::OkStatus();  // a new DB
  auto meta = state::Decode("Index", **index);
  if (!meta.ok())
    return absl::DataLossError("server state record 'meta/index' cannot be decoded: " +
                               std::string(meta.status().message()));
  index_ = meta->value("Index", uint64_t{1});
  const codec::Json tables = meta->value("Tables", codec::Json::object());
  for (auto& [t, i] : table_index_)
    i = tables.value(TableName(t), uint64_t{1});

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
  }
  auto nodes = LoadAll<model::Node>(*store_, kNodePrefix, "Node", codec::NodeFromJson);
  if (!nodes.ok())
    return nodes.status();
  for (const NodePtr& n : *nodes)
    nodes_[n->id] = n;
  DROVER_LOG_INFO("server: loaded {} jobs, {} evaluations, {} allocations, {} nodes (index {})",
                  jobs_.size(), evals_.size(), allocs_.size(), nodes_.size(), index_);
  return absl::OkStatus();
}

asio::awaitable<absl::Status> StateStore::Flush() {
  if (!store_)
    co_return absl::OkStatus();
  co_await store_->FlushAsync();
  const uint64_t failed = store_->stats().failed;
  if (failed == failed_writes_seen_)
    co_return absl::OkStatus();
  const uint64_t n = failed - failed_writes_seen_;
  failed_writes_seen_ = failed;
  co_return absl::UnavailableError("failed to persist the server state (" + std::to_string(n) +
                                   " commits failed; see the agent log)");
}

absl::StatusOr<std::unique_ptr<state::Store>> OpenServerStore(const std::string& data_dir) {
  const std::filesystem::path file = std::filesystem::path(data_dir) / "server" / "state.db";
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::filesystem::permissions(file.parent_path(), std::filesystem::perms::owner_all, ec);
  if (ec) {
    return absl::InternalError("failed to create '" + file.parent_path().string() +
                               "': " + ec.message());
  }
  auto backend = state::OpenLmdb(file);
  if (!backend.ok())
    return backend.status();
  const state::Schema schema{.name = "server state DB", .version = kServerSchemaVersion};
  if (absl::Status s = state::PrepareSchema(**backend, file, schema); !s.ok())
    return absl::Status(s.code(), file.string() + ": " + std::string(s.message()));
  return std::make_unique<state::Store>(std::move(*backend));
}

}  // namespace drover::server
