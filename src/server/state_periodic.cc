// The server state's periodic launch records and the parent/child relation of
// periodic and parameterized jobs (state_store.h).
#include "codec/json.h"
#include "server/state_layout.h"
#include "server/state_store.h"
#include "state/state_db.h"

namespace drover::server {

std::vector<JobPtr> StateStore::PeriodicJobs() const {
  std::vector<JobPtr> out;
  for (const auto& [key, job] : jobs_) {
    if (job->IsPeriodicActive())
      out.push_back(job);
  }
  return out;
}

std::vector<JobPtr> StateStore::ChildJobs(const std::string& ns, const std::string& parent) const {
  std::vector<JobPtr> out;
  // Children's IDs start with "<parent>/": one range of the ordered table.
  const std::string first = JobKey(ns, parent + "/");
  for (auto it = jobs_.lower_bound(first); it != jobs_.end() && layout::HasPrefix(it->first, first);
       ++it) {
    if (it->second->parent_id == parent)
      out.push_back(it->second);
  }
  return out;
}

std::optional<model::PeriodicLaunch> StateStore::LastPeriodicLaunch(
    const std::string& ns, const std::string& job_id) const {
  auto it = periodic_launches_.find(JobKey(ns, job_id));
  if (it == periodic_launches_.end())
    return std::nullopt;
  return *it->second;
}

void StateStore::SetPeriodicLaunch(const std::string& ns, const std::string& job_id,
                                   int64_t launch) {
  const std::string key = JobKey(ns, job_id);
  const uint64_t index = BumpGlobal();
  model::PeriodicLaunch record{.namespace_ = ns, .job_id = job_id, .launch = launch};
  auto it = periodic_launches_.find(key);
  record.create_index = it != periodic_launches_.end() ? it->second->create_index : index;
  record.modify_index = index;
  periodic_launches_[key] = std::make_shared<const model::PeriodicLaunch>(std::move(record));
  SavePeriodicLaunch(key);
}

void StateStore::RestorePeriodicLaunch(const std::string& ns, const std::string& job_id,
                                       const std::optional<model::PeriodicLaunch>& before) {
  const std::string key = JobKey(ns, job_id);
  if (before)
    periodic_launches_[key] = std::make_shared<const model::PeriodicLaunch>(*before);
  else
    periodic_launches_.erase(key);
  BumpGlobal();
  SavePeriodicLaunch(key);
}

void StateStore::DropPeriodicLaunch(const std::string& ns, const std::string& id) {
  const std::string key = JobKey(ns, id);
  if (periodic_launches_.erase(key) > 0)
    SavePeriodicLaunch(key);
}

absl::Status StateStore::ApplyPeriodicRecord(const Record& r) {
  const std::string key = r.key.substr(std::string_view(layout::kPeriodicPrefix).size());
  if (!r.value) {
    periodic_launches_.erase(key);
    return absl::OkStatus();
  }
  auto j = state::Decode("PeriodicLaunch", *r.value);
  if (!j.ok())
    return j.status();
  auto launch = codec::PeriodicLaunchFromJson(*j);
  if (!launch.ok())
    return launch.status();
  if (JobKey(launch->namespace_, launch->job_id) != key)
    return absl::InvalidArgumentError("the key does not name the job whose launch it holds");
  index_ = std::max(index_, launch->modify_index);
  periodic_launches_[key] = std::make_shared<const model::PeriodicLaunch>(*std::move(launch));
  return absl::OkStatus();
}

}  // namespace drover::server
