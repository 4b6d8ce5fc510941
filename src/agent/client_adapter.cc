#include "agent/client_adapter.h"

#include <cstdlib>
#include <optional>

#include "client/allocrunner/alloc_usage.h"
#include "common/derived_token.h"
#include "devices/alloc_stats_json.h"

namespace drover::agent {

namespace {

double CoreMhz(const model::Node& node) {
  auto it = node.attributes.find("cpu.frequency");
  return it == node.attributes.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
}

// What an allocation's archive may carry: its group's ephemeral disk (Nomad's default
// of 300 MB when the job says nothing).
uint64_t EphemeralDiskBytes(const model::Allocation& alloc) {
  int64_t mb = 300;
  if (alloc.job) {
    if (const model::TaskGroup* g = alloc.job->FindGroup(alloc.task_group);
        g != nullptr && g->ephemeral_disk && g->ephemeral_disk->size_mb > 0) {
      mb = g->ephemeral_disk->size_mb;
    }
  }
  return static_cast<uint64_t>(mb) << 20;
}

}  // namespace

absl::StatusOr<allocrunner::AllocRunner*> ClientAdapter::Runner(const std::string& alloc_id) const {
  allocrunner::AllocRunner* r = client_.GetAllocRunner(alloc_id);
  if (r == nullptr || r->destroyed())
    return api::UnknownAllocation(alloc_id);
  return r;
}

bool ClientAdapter::HasAlloc(const std::string& alloc_id) const {
  return client_.GetAllocRunner(alloc_id) != nullptr;
}

absl::StatusOr<api::AllocStats> ClientAdapter::AllocStatsOf(const std::string& alloc_id) const {
  auto runner = Runner(alloc_id);
  if (!runner.ok())
    return runner.status();
  api::AllocStats out;
  out.usage = (*runner)->Usage();  // the runner sums its tasks'
  allocrunner::FillTotalTicks(out.usage, CoreMhz(client_.node()));
  const devices::DeviceManager* dm = client_.device_manager();
  if (dm == nullptr)
    return out;
  // Built here, at once: the samples it points into cannot change meanwhile.
  devices::AllocDeviceStatsJson devices(*dm);
  const std::shared_ptr<const model::Allocation> alloc = (*runner)->alloc();
  for (const auto& [task, usage] : out.usage.tasks) {
    auto it = alloc->allocated_resources.tasks.find(task);
    if (it != alloc->allocated_resources.tasks.end() && !it->second.devices.empty())
      out.task_devices[task] = devices.Task(it->second.devices);
  }
  // Instances of one device model used by different tasks form one group.
  out.devices = devices.Alloc();
  return out;
}

std::function<model::HostStats()> ClientAdapter::HostStatsCollector() {
  client::HostStatsCollector* collector = &client_.host_stats();
  return [collector] { return collector->Collect(); };
}

std::string ClientAdapter::DeviceStatsJson() const {
  const devices::DeviceManager* dm = client_.device_manager();
  return dm == nullptr ? "[]" : dm->AllStatsJson();
}

absl::Status ClientAdapter::Restart(const std::string& alloc_id, api::RestartScope scope,
                                    const std::string& task) {
  // A destroyed runner still answers (with its state's error), as it always did.
  allocrunner::AllocRunner* runner = client_.GetAllocRunner(alloc_id);
  if (runner == nullptr)
    return api::UnknownAllocation(alloc_id);
  switch (scope) {
    case api::RestartScope::kAll:
      return runner->RestartAll("User requested all tasks to restart");
    case api::RestartScope::kRunning:
      return runner->RestartRunning("User requested running tasks to restart");
    case api::RestartScope::kTask:
      break;
  }
  return runner->RestartTask(task, "User requested task to restart");
}

absl::Status ClientAdapter::Signal(const std::string& alloc_id, const std::string& task,
                                   const std::string& signal) {
  allocrunner::AllocRunner* runner = client_.GetAllocRunner(alloc_id);
  if (runner == nullptr)
    return api::UnknownAllocation(alloc_id);
  return runner->Signal(task, signal);
}

asio::awaitable<absl::Status> ClientAdapter::CollectAllocation(std::string alloc_id) {
  co_return co_await client_.CollectAllocation(alloc_id);
}

asio::awaitable<void> ClientAdapter::CollectAll() {
  return client_.CollectAll();
}

absl::StatusOr<allocdir::AllocDirLocation> ClientAdapter::AllocDirOf(
    const std::string& alloc_id) const {
  auto runner = Runner(alloc_id);
  if (!runner.ok())
    return runner.status();
  // Paths only: the runner may be collected while the pool reads.
  return (*runner)->alloc_dir().location();
}

bool ClientAdapter::MayGrow(const std::string& alloc_id, const std::string& task) const {
  auto runner = Runner(alloc_id);
  if (!runner.ok())
    return false;
  if (task.empty())
    return true;
  taskrunner::TaskRunner* tr = (*runner)->task_runner(task);
  return tr != nullptr && tr->state().state != model::kTaskStateDead;
}

absl::StatusOr<api::SnapshotSource> ClientAdapter::SnapshotOf(const std::string& alloc_id,
                                                              const std::string& token) const {
  auto runner = Runner(alloc_id);
  if (!runner.ok())
    return runner.status();
  // Only a replacement allocation's node, which the servers gave the token derived
  // from this node's secret, may take the data.
  if (!common::ValidMigrateToken(client_.node().secret_id, alloc_id, token)) {
    return absl::PermissionDeniedError(
        "Permission denied: a snapshot needs the migrate token of allocation " + alloc_id);
  }
  api::SnapshotSource out{.dir = (*runner)->alloc_dir().location()};
  for (auto* tr : (*runner)->task_runners())
    out.tasks.push_back(tr->name());
  out.max_data_bytes = EphemeralDiskBytes(*(*runner)->alloc());
  return out;
}

}  // namespace drover::agent
