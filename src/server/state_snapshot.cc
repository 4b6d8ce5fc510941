// StateStore's operator snapshots: every record out, and a whole state in.
#include <set>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "server/state_layout.h"
#include "server/state_store.h"
#include "state/state_db.h"

namespace drover::server {

std::function<std::vector<model::StateRecord>()> StateStore::SnapshotRecords() const {
  std::vector<JobPtr> jobs;
  for (const auto& [key, versions] : job_versions_)
    jobs.insert(jobs.end(), versions.begin(), versions.end());
  std::vector<EvalPtr> evals;
  for (const auto& [id, e] : evals_)
    evals.push_back(e);
  std::vector<AllocPtr> allocs;
  for (const auto& [id, a] : allocs_)
    allocs.push_back(a);
  std::vector<NodePtr> nodes;
  for (const auto& [id, n] : nodes_)
    nodes.push_back(n);
  codec::Json tables = codec::Json::object();
  for (const auto& [t, index] : table_index_)
    tables[layout::TableName(t)] = index;
  codec::Json meta = {{"Index", index_}, {"Tables", tables}};
  std::vector<DeploymentPtr> deployments;
  for (const auto& [id, d] : deployments_)
    deployments.push_back(d);
  std::vector<std::shared_ptr<const model::JobScalingEvents>> scaling;
  for (const auto& [key, events] : scaling_events_)
    scaling.push_back(events);
  std::vector<std::shared_ptr<const model::PeriodicLaunch>> launches;
  for (const auto& [key, launch] : periodic_launches_)
    launches.push_back(launch);
  return [jobs = std::move(jobs), evals = std::move(evals), allocs = std::move(allocs),
          nodes = std::move(nodes), meta = std::move(meta), scheduler = scheduler_config_,
          scaling = std::move(scaling), deployments = std::move(deployments),
          launches = std::move(launches)] {
    std::vector<model::StateRecord> out;
    out.reserve(jobs.size() + evals.size() + allocs.size() + nodes.size() + 2);
    out.push_back({layout::kIndexKey, state::Encode("Index", meta)});
    if (scheduler) {
      out.push_back({layout::kSchedulerConfigKey,
                     state::Encode("SchedulerConfig", codec::ToJson(*scheduler))});
    }
    for (const JobPtr& j : jobs)
      out.push_back(
          {layout::JobRecordKey(j->namespace_, j->id, j->version), layout::EncodeRecord(*j)});
    for (const EvalPtr& e : evals)
      out.push_back({layout::kEvalPrefix + e->id, layout::EncodeRecord(*e)});
    for (const AllocPtr& a : allocs)
      out.push_back({layout::kAllocPrefix + a->id, layout::EncodeRecord(*a)});
    for (const NodePtr& n : nodes)
      out.push_back({layout::kNodePrefix + n->id, layout::EncodeRecord(*n)});
    for (const DeploymentPtr& d : deployments)
      out.push_back({layout::kDeploymentPrefix + d->id, layout::EncodeRecord(*d)});
    for (const auto& events : scaling) {
      out.push_back({layout::kScalingPrefix + events->namespace_ + '\0' + events->job_id,
                     state::Encode("JobScalingEvents", codec::ToJson(*events))});
    }
    for (const auto& launch : launches) {
      out.push_back({layout::kPeriodicPrefix + launch->namespace_ + '\0' + launch->job_id,
                     state::Encode("PeriodicLaunch", codec::ToJson(*launch))});
    }
    return out;
  };
}

absl::Status StateStore::Restore(const std::vector<model::StateRecord>& snapshot) {
  std::vector<Record> records;
  records.reserve(snapshot.size());
  for (const model::StateRecord& r : snapshot)
    records.push_back({r.key, r.value});
  // All or nothing: decoded first by a store of its own.
  StateStore check(executor_, clock_);
  check.ApplyRecords(records);
  if (check.skipped_records() > 0) {
    return absl::InvalidArgumentError(
        "the snapshot holds " + std::to_string(check.skipped_records()) +
        " records this server cannot decode (such as '" +
        layout::Printable(*check.logged_bad_keys_.begin()) + "'); nothing was restored");
  }
  const uint64_t before = index_;
  // What is stored now: whatever the snapshot does not hold is deleted, after its
  // records are written (a follower or a node never sees an empty state between).
  std::set<std::string> stale;
  std::set<std::string> nodes_with_allocs;
  for (const auto& [key, versions] : job_versions_) {
    for (const JobPtr& j : versions)
      stale.insert(layout::JobRecordKey(j->namespace_, j->id, j->version));
  }
  for (const auto& [id, e] : evals_)
    stale.insert(layout::kEvalPrefix + id);
  for (const auto& [id, a] : allocs_) {
    stale.insert(layout::kAllocPrefix + id);
    nodes_with_allocs.insert(a->node_id);
  }
  for (const auto& [id, n] : nodes_)
    stale.insert(layout::kNodePrefix + id);
  if (scheduler_config_)
    stale.insert(layout::kSchedulerConfigKey);
  for (const auto& [key, events] : scaling_events_)
    stale.insert(layout::kScalingPrefix + key);
  for (const auto& [key, launch] : periodic_launches_)
    stale.insert(layout::kPeriodicPrefix + key);
  for (const auto& [id, d] : deployments_)
    stale.insert(layout::kDeploymentPrefix + id);
  for (const Record& r : records)
    stale.erase(r.key);

  ResetTo(records);
  index_ = std::max(index_, before) + 1;
  for (auto& [t, i] : table_index_)
    i = index_;
  // Every restored allocation is a change the servers made now: each node looks again,
  // whatever index it last saw (the snapshot's may be below it).
  for (auto& [id, a] : allocs_) {
    model::Allocation copy = *a;
    copy.modify_index = copy.alloc_modify_index = index_;
    a = std::make_shared<const model::Allocation>(std::move(copy));
    nodes_with_allocs.insert(a->node_id);
  }
  for (const std::string& node : nodes_with_allocs)
    NodeAllocsChanged(node, index_);
  SaveAll();
  if (store_) {
    for (const std::string& key : stale)
      store_->Delete(key);
  }
  changed_.cancel();
  return absl::OkStatus();
}

}  // namespace drover::server
