// drover alloc status: one allocation's placement, its tasks' resources and recent
// events (Nomad's command/alloc_status.go).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/stats_format.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "model/allocation.h"

namespace drover::cli {

namespace {

constexpr uint64_t kBytesPerMegabyte = 1024 * 1024;

// The lifecycle of each task of the allocation's group (absent: main task).
std::map<std::string, model::Lifecycle> TaskLifecycles(const model::Allocation& alloc) {
  std::map<std::string, model::Lifecycle> out;
  if (const model::TaskGroup* group = alloc.Group(); group != nullptr) {
    for (const model::Task& task : group->tasks) {
      if (task.lifecycle && !task.lifecycle->hook.empty()) {
        out[task.name] = *task.lifecycle;
      }
    }
  }
  return out;
}

// Nomad's sortedTaskStateIterator: by name, then lifecycle tasks (non-sidecars first)
// before main tasks.
std::vector<std::string> SortedTaskNames(const model::Allocation& alloc,
                                         const std::map<std::string, model::Lifecycle>& lcs) {
  std::vector<std::string> names;
  for (const auto& [name, state] : alloc.task_states) {
    names.push_back(name);
  }
  auto rank = [&](const std::string& name) {
    auto it = lcs.find(name);
    if (it == lcs.end()) {
      return 2;
    }
    return it->second.sidecar ? 1 : 0;
  };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return names;
}

std::string LifecycleDisplayName(const std::map<std::string, model::Lifecycle>& lcs,
                                 const std::string& task) {
  auto it = lcs.find(task);
  if (it == lcs.end()) {
    return "main";
  }
  return it->second.sidecar ? absl::StrCat(it->second.hook, "-sidecar") : it->second.hook;
}

std::string FormatBasicInfo(const model::Allocation& alloc, bool verbose, size_t id_length,
                            common::Time now) {
  std::vector<std::string> basic = {
      absl::StrCat("ID|", alloc.id),
      absl::StrCat("Eval ID|", Limit(alloc.eval_id, id_length)),
      absl::StrCat("Name|", alloc.name),
      absl::StrCat("Node ID|", Limit(alloc.node_id, id_length)),
      absl::StrCat("Node Name|", alloc.node_name),
      absl::StrCat("Job ID|", alloc.job_id),
      absl::StrCat("Job Version|", alloc.job ? alloc.job->version : 0),
      absl::StrCat("Client Status|", alloc.client_status),
      absl::StrCat("Client Description|", alloc.client_description),
      absl::StrCat("Desired Status|", alloc.desired_status),
      absl::StrCat("Desired Description|", alloc.desired_description),
  };
  if (verbose) {
    basic.push_back(absl::StrCat("Created|", FormatUnixNano(alloc.create_time)));
    basic.push_back(absl::StrCat("Modified|", FormatUnixNano(alloc.modify_time)));
    basic.push_back(absl::StrCat("Evaluated Nodes|", alloc.metrics.nodes_evaluated));
    basic.push_back(absl::StrCat("Filtered Nodes|", alloc.metrics.nodes_filtered));
    basic.push_back(absl::StrCat("Exhausted Nodes|", alloc.metrics.nodes_exhausted));
    basic.push_back(absl::StrCat("Failures|", alloc.metrics.coalesced_failures));
  } else {
    basic.push_back(
        absl::StrCat("Created|", PrettyTimeDiff(common::FromUnixNanos(alloc.create_time), now)));
    basic.push_back(
        absl::StrCat("Modified|", PrettyTimeDiff(common::FromUnixNanos(alloc.modify_time), now)));
  }
  if (!alloc.next_allocation.empty()) {
    basic.push_back(absl::StrCat("Replacement Alloc ID|", Limit(alloc.next_allocation, id_length)));
  }
  return FormatKV(basic);
}

// Live usage of one task from GET /v1/client/allocation/:id/stats, when available.
struct TaskUsage {
  std::optional<int64_t> cpu_ticks;
  std::optional<uint64_t> memory_bytes;
};

TaskUsage UsageFromStats(const codec::Json* stats, const std::string& task) {
  TaskUsage usage;
  if (stats == nullptr) {
    return usage;
  }
  const codec::Json* tasks = JsonMember(*stats, "Tasks");
  const codec::Json* t = tasks != nullptr ? JsonMember(*tasks, task) : nullptr;
  const codec::Json* ru = t != nullptr ? JsonMember(*t, "ResourceUsage") : nullptr;
  if (ru == nullptr) {
    return usage;
  }
  if (const codec::Json* cpu = JsonMember(*ru, "CpuStats"); cpu != nullptr) {
    const codec::Json* ticks = JsonMember(*cpu, "TotalTicks");
    if (ticks != nullptr && ticks->is_number()) {
      usage.cpu_ticks = static_cast<int64_t>(std::floor(ticks->get<double>()));
    }
  }
  if (const codec::Json* mem = JsonMember(*ru, "MemoryStats"); mem != nullptr) {
    uint64_t bytes = JsonUint(*mem, "RSS");
    if (bytes == 0) {
      bytes = JsonUint(*mem, "Usage");
    }
    usage.memory_bytes = bytes;
  }
  return usage;
}

void OutputTaskResources(const model::Allocation& alloc, const std::string& task,
                         const codec::Json* stats, Ui& ui) {
  auto it = alloc.allocated_resources.tasks.find(task);
  if (it == alloc.allocated_resources.tasks.end()) {
    return;
  }
  const model::AllocatedTaskResources& res = it->second;
  std::vector<std::string> addresses;
  for (const model::NetworkResource& net : res.networks) {
    for (const auto* ports : {&net.dynamic_ports, &net.reserved_ports}) {
      for (const model::Port& port : *ports) {
        addresses.push_back(absl::StrCat(port.label, ": ", net.ip, ":", port.value));
      }
    }
  }
  for (const model::AllocatedPortMapping& port : alloc.allocated_resources.shared.ports) {
    addresses.push_back(absl::StrCat(port.label, ": ", port.host_ip, ":", port.value));
  }

  std::string cpu = absl::StrCat(res.cpu_shares);
  std::string memory = HumanizeIBytes(static_cast<uint64_t>(res.memory_mb) * kBytesPerMegabyte);
  std::string memory_max;
  if (res.memory_max_mb != 0 && res.memory_max_mb != res.memory_mb) {
    memory_max = absl::StrCat(
        "Max: ", HumanizeIBytes(static_cast<uint64_t>(res.memory_max_mb) * kBytesPerMegabyte));
  }
  const TaskUsage usage = UsageFromStats(stats, task);
  if (usage.cpu_ticks) {
    cpu = absl::StrCat(*usage.cpu_ticks, "/", cpu);
  }
  if (usage.memory_bytes) {
    memory = absl::StrCat(HumanizeIBytes(*usage.memory_bytes), "/", memory);
  }
  const std::string disk = HumanizeIBytes(
      static_cast<uint64_t>(alloc.allocated_resources.shared.disk_mb) * kBytesPerMegabyte);

  std::vector<std::string> rows = {"CPU|Memory|Disk|Addresses"};
  rows.push_back(
      absl::StrCat(cpu, " MHz|", memory, "|", disk, "|", addresses.empty() ? "" : addresses[0]));
  if (!memory_max.empty() || addresses.size() > 1) {
    rows.push_back(absl::StrCat("|", memory_max, "||", addresses.size() > 1 ? addresses[1] : ""));
  }
  for (size_t i = 2; i < addresses.size(); ++i) {
    rows.push_back(absl::StrCat("|||", addresses[i]));
  }
  ui.Output("Task Resources:");
  ui.Output(FormatListWithSpaces(rows));
}

void OutputTaskStatus(const model::TaskState& state, Ui& ui) {
  ui.Output("Task Events:");
  ui.Output(FormatKV({
      absl::StrCat("Started At|", FormatTaskTime(state.started_at)),
      absl::StrCat("Finished At|", FormatTaskTime(state.finished_at)),
      absl::StrCat("Total Restarts|", state.restarts),
      absl::StrCat("Last Restart|", FormatTaskTime(state.last_restart)),
  }));
  ui.Output("");
  ui.Output("Recent Events:");
  std::vector<std::string> rows = {"Time|Type|Description"};
  // Newest first.
  for (auto it = state.events.rbegin(); it != state.events.rend(); ++it) {
    model::TaskEvent event = *it;
    if (event.display_message.empty()) {
      event.PopulateDisplayMessage();
    }
    rows.push_back(
        absl::StrCat(FormatUnixNano(event.time), "|", event.type, "|", event.display_message));
  }
  ui.Output(FormatList(rows));
}

void OutputShortTaskStatus(const model::Allocation& alloc, Ui& ui) {
  const auto lcs = TaskLifecycles(alloc);
  std::vector<std::string> rows = {"Name|State|Last Event|Time|Lifecycle"};
  for (const std::string& task : SortedTaskNames(alloc, lcs)) {
    const model::TaskState& state = alloc.task_states.at(task);
    std::string last_event;
    std::string last_time;
    if (!state.events.empty()) {
      last_event = state.events.back().type;
      last_time = FormatUnixNano(state.events.back().time);
    }
    rows.push_back(absl::StrCat(task, "|", state.state, "|", last_event, "|", last_time, "|",
                                LifecycleDisplayName(lcs, task)));
  }
  ui.Output("\nTasks");
  ui.Output(FormatList(rows));
}

void OutputTaskDetails(const model::Allocation& alloc, const codec::Json* stats, bool detailed,
                       Ui& ui) {
  const auto lcs = TaskLifecycles(alloc);
  for (const std::string& task : SortedTaskNames(alloc, lcs)) {
    const model::TaskState& state = alloc.task_states.at(task);
    std::string lifecycle;
    if (auto it = lcs.find(task); it != lcs.end()) {
      lifecycle = absl::StrCat(" (", LifecycleDisplayName(lcs, task), ")");
    }
    ui.Output(absl::StrCat("\nTask ", Quote(task), lifecycle, " is ", Quote(state.state)));
    OutputTaskResources(alloc, task, stats, ui);
    if (detailed && stats != nullptr) {
      if (std::string usage = FormatTaskUsage(*stats, task); !usage.empty())
        ui.Output(absl::StrCat("\n", usage));
    }
    ui.Output("");
    OutputTaskStatus(state, ui);
  }
}

}  // namespace

int RunAllocStatus(const AllocStatusOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> alloc_id =
      LookupAllocId(client, ui, options.id, options.verbose, id_length);
  if (!alloc_id) {
    return kExitError;
  }
  absl::StatusOr<codec::Json> json =
      GetJson(client, absl::StrCat("/v1/allocation/", PathEscape(*alloc_id)));
  if (!json.ok()) {
    ui.Error(absl::StrCat("Error querying allocation: ", json.status().message()));
    return kExitError;
  }
  absl::StatusOr<model::Allocation> alloc = codec::AllocationFromJson(*json);
  if (!alloc.ok()) {
    ui.Error(absl::StrCat("Error querying allocation: ", alloc.status().message()));
    return kExitError;
  }

  ui.Output(FormatBasicInfo(*alloc, options.verbose, id_length, ui.Now()));
  if (options.short_output) {
    OutputShortTaskStatus(*alloc, ui);
    return kExitOk;
  }
  // Resource usage is best effort: the node may be down or not report stats.
  absl::StatusOr<codec::Json> stats =
      GetJson(client, absl::StrCat("/v1/client/allocation/", PathEscape(*alloc_id), "/stats"));
  OutputTaskDetails(*alloc, stats.ok() ? &*stats : nullptr, options.stats, ui);
  return kExitOk;
}

}  // namespace drover::cli
