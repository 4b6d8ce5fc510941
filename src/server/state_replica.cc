// StateStore's replication: applying the records a leader wrote to etcd (docs/ha.md).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/logging.h"
#include "server/state_layout.h"
#include "server/state_store.h"
#include "state/state_db.h"

namespace drover::server {
namespace {

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Decodes a record's bytes as `field`, through `from_json`.
template <typename T, typename FromJson>
absl::StatusOr<std::shared_ptr<const T>> DecodeRecord(const std::string& bytes, const char* field,
                                                      FromJson from_json) {
  auto j = state::Decode(field, bytes);
  if (!j.ok())
    return j.status();
  absl::StatusOr<T> value = from_json(*j);
  if (!value.ok())
    return value.status();
  return std::make_shared<const T>(std::move(*value));
}

// DecodeRecord, and the object's ID must be the one its key names.
template <typename T, typename FromJson>
absl::StatusOr<std::shared_ptr<const T>> DecodeNamed(const std::string& id,
                                                     const std::string& bytes, const char* field,
                                                     FromJson from_json) {
  auto decoded = DecodeRecord<T>(bytes, field, from_json);
  if (decoded.ok() && (*decoded)->id != id)
    return absl::InvalidArgumentError(std::string("the key does not name the ") + field +
                                      " it holds");
  return decoded;
}

}  // namespace

void StateStore::RaiseIndex(Table t, uint64_t seen) {
  table_index_[t] = std::max(table_index_[t], seen);
  index_ = std::max(index_, seen);
}

void StateStore::ClearObjects() {
  jobs_.clear();
  job_versions_.clear();
  evals_.clear();
  evals_by_job_.clear();
  allocs_.clear();
  allocs_by_job_.clear();
  allocs_by_node_.clear();
  nodes_.clear();
  scheduler_config_.reset();
  scaling_events_.clear();
  periodic_launches_.clear();
  deployments_.clear();
  deployments_by_job_.clear();
  running_deployments_.clear();
}

std::shared_ptr<state::Store> StateStore::SetWriter(std::shared_ptr<state::Store> store) {
  std::shared_ptr<state::Store> old = std::move(store_);
  store_ = std::move(store);
  resave_on_failure_ = false;
  failed_writes_seen_ = store_ ? store_->stats().failed : 0;
  return old;
}

void StateStore::ResetTo(const std::vector<Record>& records) {
  ClearObjects();
  index_ = 1;
  for (auto& [t, i] : table_index_)
    i = 1;
  node_allocs_index_.clear();
  // The whole state at once: not a change the event stream tells, and what the feed
  // told may not have happened (a leader's term ended): readers start over.
  ResetEventFeed();
  publish_ = false;
  ApplyRecords(records);
  publish_ = true;
  unsettled_ = false;
  // Every waiting node looks again: its allocations may differ from what it was told.
  for (auto& [node, event] : node_allocs_changed_)
    event->Set();
  node_allocs_changed_.clear();
}

void StateStore::ApplyRecords(const std::vector<Record>& records) {
  for (const Record& r : records) {
    if (ApplyRecord(r))
      continue;
    ++skipped_records_;
  }
  changed_.cancel();
}

void StateStore::ApplyIndexRecord(const std::string& value) {
  auto meta = state::Decode("Index", value);
  if (!meta.ok() || !meta->is_object())
    return;
  if (auto it = meta->find("Index"); it != meta->end() && it->is_number_unsigned())
    index_ = std::max(index_, it->get<uint64_t>());
  auto tables = meta->find("Tables");
  if (tables == meta->end() || !tables->is_object())
    return;
  for (auto& [t, i] : table_index_) {
    auto v = tables->find(layout::TableName(t));
    if (v != tables->end() && v->is_number_unsigned())
      i = std::max(i, v->get<uint64_t>());
  }
}

void StateStore::ApplyJobRecord(const std::string& key, JobPtr job) {
  // Checked by the caller: the key parses.
  const layout::JobRecordName name = *layout::ParseJobRecordKey(key);
  const std::string job_key = JobKey(name.ns, name.id);
  auto& versions = job_versions_[job_key];  // newest first
  auto same = std::find_if(versions.begin(), versions.end(),
                           [&](const JobPtr& j) { return j->version == name.version; });
  if (same != versions.end())
    versions.erase(same);
  if (job) {
    auto pos = std::find_if(versions.begin(), versions.end(),
                            [&](const JobPtr& j) { return j->version < job->version; });
    RaiseIndex(Table::kJobs,
               std::max({job->modify_index, job->job_modify_index, job->create_index}));
    versions.insert(pos, std::move(job));
  }
  if (versions.empty()) {
    job_versions_.erase(job_key);
    if (auto gone = jobs_.find(job_key); gone != jobs_.end()) {
      Publish(gone->second, "JobDeregistered");  // a purge, as the leader told it
      jobs_.erase(gone);
    }
  } else if (jobs_[job_key] != versions.front()) {
    jobs_[job_key] = versions.front();
    Publish(versions.front());
  }
}

absl::Status StateStore::ApplyEvalRecord(const std::string& id,
                                         const std::optional<std::string>& value) {
  if (!value) {
    if (auto it = evals_.find(id); it != evals_.end()) {
      Unindex(evals_by_job_, JobKey(it->second->namespace_, it->second->job_id), id);
      evals_.erase(it);
    }
    return absl::OkStatus();
  }
  auto e = DecodeNamed<model::Evaluation>(id, *value, "Evaluation", codec::EvaluationFromJson);
  if (!e.ok())
    return e.status();
  evals_[id] = *e;
  evals_by_job_[JobKey((*e)->namespace_, (*e)->job_id)].insert(id);
  RaiseIndex(Table::kEvals, std::max((*e)->modify_index, (*e)->create_index));
  Publish(*e);
  return absl::OkStatus();
}

absl::Status StateStore::ApplyAllocRecord(const std::string& id,
                                          const std::optional<std::string>& value) {
  if (!value) {
    if (auto it = allocs_.find(id); it != allocs_.end()) {
      const AllocPtr a = it->second;
      Unindex(allocs_by_job_, JobKey(a->namespace_, a->job_id), id);
      Unindex(allocs_by_node_, a->node_id, id);
      allocs_.erase(it);
      NodeAllocsChanged(a->node_id, index_);
    }
    return absl::OkStatus();
  }
  auto a = DecodeNamed<model::Allocation>(id, *value, "Allocation", codec::AllocationFromJson);
  if (!a.ok())
    return a.status();
  const AllocPtr& alloc = *a;
  auto it = allocs_.find(id);
  // A change the servers made (not a client's report) wakes the node.
  const bool servers_changed =
      it == allocs_.end() || it->second->alloc_modify_index != alloc->alloc_modify_index;
  allocs_[id] = alloc;
  allocs_by_job_[JobKey(alloc->namespace_, alloc->job_id)].insert(id);
  allocs_by_node_[alloc->node_id].insert(id);
  RaiseIndex(Table::kAllocs,
             std::max({alloc->modify_index, alloc->alloc_modify_index, alloc->create_index}));
  if (servers_changed)
    NodeAllocsChanged(alloc->node_id, alloc->alloc_modify_index);
  Publish(alloc);
  return absl::OkStatus();
}

absl::Status StateStore::ApplyNodeRecord(const std::string& id,
                                         const std::optional<std::string>& value) {
  if (!value) {
    nodes_.erase(id);
    node_allocs_index_.erase(id);
    return absl::OkStatus();
  }
  auto n = DecodeNamed<model::Node>(id, *value, "Node", codec::NodeFromJson);
  if (!n.ok())
    return n.status();
  nodes_[id] = *n;
  RaiseIndex(Table::kNodes, std::max((*n)->modify_index, (*n)->create_index));
  Publish(*n);
  return absl::OkStatus();
}

absl::Status StateStore::ApplyJobRecordBytes(const Record& r) {
  if (!layout::ParseJobRecordKey(r.key))
    return absl::InvalidArgumentError("not a job record's key");
  JobPtr job;
  if (r.value) {
    auto decoded = DecodeRecord<model::Job>(*r.value, "Job", codec::JobFromJson);
    if (!decoded.ok())
      return decoded.status();
    job = *std::move(decoded);
    if (layout::JobRecordKey(job->namespace_, job->id, job->version) != r.key)
      return absl::InvalidArgumentError("the key does not name the job version it holds");
  }
  ApplyJobRecord(r.key, std::move(job));
  return absl::OkStatus();
}

absl::Status StateStore::ApplySchedulerConfigRecord(const std::optional<std::string>& value) {
  if (!value) {
    scheduler_config_.reset();
    return absl::OkStatus();
  }
  auto j = state::Decode("SchedulerConfig", *value);
  if (!j.ok())
    return j.status();
  auto config = codec::StoredSchedulerConfigFromJson(*j);
  if (!config.ok())
    return config.status();
  index_ = std::max(index_, config->modify_index);
  scheduler_config_ = *std::move(config);
  return absl::OkStatus();
}

absl::Status StateStore::ApplyScalingRecord(const Record& r) {
  const std::string key = r.key.substr(std::string_view(layout::kScalingPrefix).size());
  if (!r.value) {
    scaling_events_.erase(key);
    return absl::OkStatus();
  }
  auto j = state::Decode("JobScalingEvents", *r.value);
  if (!j.ok())
    return j.status();
  auto events = codec::JobScalingEventsFromJson(*j);
  if (!events.ok())
    return events.status();
  if (JobKey(events->namespace_, events->job_id) != key)
    return absl::InvalidArgumentError("the key does not name the job whose events it holds");
  index_ = std::max(index_, events->modify_index);
  scaling_events_[key] = std::make_shared<const model::JobScalingEvents>(*std::move(events));
  return absl::OkStatus();
}

bool StateStore::ApplyRecord(const Record& r) {
  absl::Status applied;
  const auto id = [&r](std::string_view prefix) { return r.key.substr(prefix.size()); };
  if (r.key == layout::kIndexKey) {
    if (r.value)
      ApplyIndexRecord(*r.value);
  } else if (StartsWith(r.key, layout::kJobPrefix)) {
    applied = ApplyJobRecordBytes(r);
  } else if (StartsWith(r.key, layout::kEvalPrefix)) {
    applied = ApplyEvalRecord(id(layout::kEvalPrefix), r.value);
  } else if (StartsWith(r.key, layout::kAllocPrefix)) {
    applied = ApplyAllocRecord(id(layout::kAllocPrefix), r.value);
  } else if (StartsWith(r.key, layout::kNodePrefix)) {
    applied = ApplyNodeRecord(id(layout::kNodePrefix), r.value);
  } else if (StartsWith(r.key, layout::kScalingPrefix)) {
    applied = ApplyScalingRecord(r);
  } else if (StartsWith(r.key, layout::kPeriodicPrefix)) {
    applied = ApplyPeriodicRecord(r);
  } else if (StartsWith(r.key, layout::kDeploymentPrefix)) {
    applied = ApplyDeploymentRecord(id(layout::kDeploymentPrefix), r.value);
  } else if (r.key == layout::kSchedulerConfigKey) {
    applied = ApplySchedulerConfigRecord(r.value);
  } else if (!StartsWith(r.key, "meta/")) {  // meta/version, meta/cluster: checked on connect
    applied = absl::InvalidArgumentError("not a key of the server state's layout");
  }
  if (applied.ok())
    return true;
  if (logged_bad_keys_.insert(r.key).second) {
    DROVER_LOG_ERROR("server: skipping state record '{}' from etcd: {}", layout::Printable(r.key),
                     applied.ToString());
  }
  return false;
}

}  // namespace drover::server
