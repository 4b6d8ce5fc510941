// drover node status: the node list, or one node's details, resources and allocations
// (Nomad's command/node_status.go).
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/listing.h"
#include "cli/lookup.h"
#include "cli/stats_format.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "model/allocation.h"
#include "model/node.h"
#include "model/task_state.h"

namespace drover::cli {

namespace {

constexpr uint64_t kBytesPerMegabyte = 1024 * 1024;

int ListNodes(const NodeStatusOptions& options, HttpClient& client, Ui& ui, size_t id_length) {
  absl::StatusOr<codec::Json> nodes = GetJson(client, "/v1/nodes");
  if (!nodes.ok()) {
    ui.Error(absl::StrCat("Error querying node status: ", nodes.status().message()));
    return kExitError;
  }
  std::vector<NodeRow> rows;
  if (nodes->is_array()) {
    for (const auto& item : *nodes) {
      rows.push_back(NodeRowFromJson(item));
    }
  }
  if (rows.empty()) {
    ui.Output("No nodes registered");
    return kExitOk;
  }
  ui.Output(FormatNodeList(rows, options.verbose, id_length));
  return kExitOk;
}

// Detected drivers, sorted, unhealthy ones marked (Nomad's outputTruncatedNodeDriverInfo).
std::string DriverSummary(const model::Node& node) {
  std::vector<std::string> drivers;
  for (const auto& [name, info] : node.drivers) {
    if (!info.detected) {
      continue;
    }
    drivers.push_back(info.healthy ? name : absl::StrCat(name, " (unhealthy)"));
  }
  std::sort(drivers.begin(), drivers.end());
  return absl::StrJoin(drivers, ",");
}

std::string DriverTable(const model::Node& node) {
  std::vector<std::string> rows = {"Driver|Detected|Healthy|Message|Time"};
  for (const auto& [name, info] : node.drivers) {
    rows.push_back(absl::StrCat(name, "|", info.detected ? "true" : "false", "|",
                                info.healthy ? "true" : "false", "|", info.health_description, "|",
                                FormatTime(info.update_time)));
  }
  return FormatList(rows);
}

// The node's events, newest first: the latest three, or all with details (-verbose).
std::string EventTable(const model::Node& node, bool verbose) {
  std::vector<std::string> rows = {verbose ? "Time|Subsystem|Message|Details"
                                           : "Time|Subsystem|Message"};
  constexpr size_t kShown = 3;
  for (auto it = node.events.rbegin(); it != node.events.rend(); ++it) {
    if (!verbose && rows.size() > kShown)
      break;
    std::string row = absl::StrCat(FormatTime(it->timestamp), "|", it->subsystem, "|", it->message);
    if (verbose) {
      std::vector<std::string> details;
      for (const auto& [k, v] : it->details)
        details.push_back(absl::StrCat(k, ": ", v));
      absl::StrAppend(&row, "|", absl::StrJoin(details, ", "));
    }
    rows.push_back(std::move(row));
  }
  return FormatList(rows);
}

// "CPU  Memory  Disk" as used/total over running allocations (Nomad's
// getAllocatedResources; total is the node's resources less its reserved ones).
std::string AllocatedResources(const model::Node& node,
                               const std::vector<model::Allocation>& running) {
  int64_t cpu = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
  for (const model::Allocation& alloc : running) {
    for (const auto& [task, res] : alloc.allocated_resources.tasks) {
      cpu += res.cpu_shares;
      memory_mb += res.memory_mb;
    }
    disk_mb += alloc.allocated_resources.shared.disk_mb;
  }
  const int64_t total_cpu = node.node_resources.cpu_shares - node.reserved_resources.cpu_shares;
  const int64_t total_mem = node.node_resources.memory_mb - node.reserved_resources.memory_mb;
  const int64_t total_disk = node.node_resources.disk_mb - node.reserved_resources.disk_mb;
  auto bytes = [](int64_t mb) {
    return HumanizeIBytes(static_cast<uint64_t>(std::max<int64_t>(mb, 0)) * kBytesPerMegabyte);
  };
  return FormatList({"CPU|Memory|Disk",
                     absl::StrCat(cpu, "/", total_cpu, " MHz|", bytes(memory_mb), "/",
                                  bytes(total_mem), "|", bytes(disk_mb), "/", bytes(total_disk))});
}

std::string MapKV(const std::map<std::string, std::string>& m) {
  std::vector<std::string> rows;
  for (const auto& [k, v] : m) {
    rows.push_back(absl::StrCat(k, "|", v));
  }
  return FormatKV(rows);
}

// One row per device instance, with its group's attributes (node status -verbose).
std::string DeviceTable(const model::Node& node) {
  std::vector<std::string> rows = {"Device|Instance|Healthy|Health Description|PCI Bus|Attributes"};
  for (const model::NodeDeviceResource& g : node.node_resources.devices) {
    std::vector<std::string> attrs;
    for (const auto& [k, a] : g.attributes)
      attrs.push_back(absl::StrCat(k, "=", a.ToString()));
    for (const model::DeviceInstance& d : g.instances) {
      rows.push_back(absl::StrCat(
          g.IdString(), "|", d.id, "|", d.healthy ? "true" : "false", "|", d.health_description,
          "|", d.locality ? d.locality->pci_bus_id : "", "|", absl::StrJoin(attrs, ", ")));
    }
  }
  return FormatList(rows);
}

// The running allocations of a node's allocation list, for the resource totals (best
// effort: a malformed allocation only drops out of them).
std::vector<model::Allocation> RunningAllocs(const codec::Json& allocs_json) {
  std::vector<model::Allocation> running;
  if (!allocs_json.is_array())
    return running;
  for (const auto& item : allocs_json) {
    if (JsonString(item, "ClientStatus") != model::kClientRunning)
      continue;
    if (absl::StatusOr<model::Allocation> alloc = codec::AllocationFromJson(item); alloc.ok())
      running.push_back(std::move(*alloc));
  }
  return running;
}

// "Host Resource Utilization" (and the full host stats with -stats), then the devices'.
void ShowHostUtilization(const model::Node& node, const codec::Json& host_stats, bool full,
                         Ui& ui) {
  uint64_t total_mhz = 0;
  if (auto it = node.attributes.find("cpu.totalcompute"); it != node.attributes.end())
    total_mhz = std::strtoull(it->second.c_str(), nullptr, 10);
  ui.Output("\nHost Resource Utilization");
  ui.Output(FormatHostUtilization(host_stats, total_mhz));
  if (full) {
    ui.Output("");
    ui.Output(FormatHostStats(host_stats));
  }
  if (const codec::Json* devices = JsonMember(host_stats, "DeviceStats"); devices != nullptr) {
    if (std::vector<std::string> rows = DeviceStatRows(*devices); !rows.empty()) {
      ui.Output("\nDevice Resource Utilization");
      ui.Output(FormatKV(rows));
    }
  }
}

int ShowNode(const NodeStatusOptions& options, HttpClient& client, Ui& ui, size_t id_length) {
  std::optional<std::string> node_id =
      LookupNodeId(client, ui, options.id, options.verbose, id_length);
  if (!node_id) {
    return kExitError;
  }
  const std::string node_path = absl::StrCat("/v1/node/", PathEscape(*node_id));
  absl::StatusOr<codec::Json> node_json = GetJson(client, node_path);
  if (!node_json.ok()) {
    ui.Error(absl::StrCat("Error querying node info: ", node_json.status().message()));
    return kExitError;
  }
  absl::StatusOr<model::Node> node = codec::NodeFromJson(*node_json);
  if (!node.ok()) {
    ui.Error(absl::StrCat("Error querying node info: ", node.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> allocs_json =
      GetJson(client, absl::StrCat(node_path, "/allocations"));
  if (!allocs_json.ok()) {
    ui.Error(absl::StrCat("Error querying node allocations: ", allocs_json.status().message()));
    return kExitError;
  }
  const std::vector<model::Allocation> running = RunningAllocs(*allocs_json);

  std::vector<std::string> basic = {
      absl::StrCat("ID|", node->id),
      absl::StrCat("Name|", node->name),
      absl::StrCat("Node Pool|", node->node_pool),
      absl::StrCat("Class|", node->node_class),
      absl::StrCat("DC|", node->datacenter),
      absl::StrCat("Drain|", node->drain ? "true" : "false"),
      absl::StrCat("Eligibility|", node->scheduling_eligibility),
      absl::StrCat("Status|", node->status),
  };
  // Host stats are best effort, as in Nomad.
  absl::StatusOr<codec::Json> host_stats =
      GetJson(client, absl::StrCat("/v1/client/stats?node_id=", QueryEscape(*node_id)));
  if (host_stats.ok() && JsonMember(*host_stats, "Uptime") != nullptr) {
    const auto uptime = std::chrono::seconds(JsonUint(*host_stats, "Uptime"));
    basic.push_back(absl::StrCat("Uptime|", model::FormatGoDuration(uptime)));
  }
  if (!options.verbose) {
    basic.push_back(absl::StrCat("Driver Status|", DriverSummary(*node)));
  }
  ui.Output(FormatKV(basic));
  if (options.verbose) {
    ui.Output("\nDrivers");
    ui.Output(DriverTable(*node));
  }
  if (!node->events.empty()) {
    ui.Output("\nNode Events");
    ui.Output(EventTable(*node, options.verbose));
  }

  ui.Output("\nAllocated Resources");
  ui.Output(AllocatedResources(*node, running));
  if (host_stats.ok() && JsonMember(*host_stats, "Memory") != nullptr)
    ShowHostUtilization(*node, *host_stats, options.stats, ui);
  if (options.verbose && !node->node_resources.devices.empty()) {
    ui.Output("\nDevices");
    ui.Output(DeviceTable(*node));
  }

  std::vector<AllocRow> allocs = AllocRowsFromJson(*allocs_json);
  std::stable_sort(allocs.begin(), allocs.end(), [](const AllocRow& a, const AllocRow& b) {
    return a.create_index > b.create_index;
  });
  ui.Output("\nAllocations");
  ui.Output(FormatAllocList(allocs, options.verbose, id_length, ui.Now()));

  if (options.verbose) {
    ui.Output("\nAttributes");
    ui.Output(MapKV(node->attributes));
    ui.Output("\nMeta");
    ui.Output(MapKV(node->meta));
  }
  return kExitOk;
}

}  // namespace

int RunNodeStatus(const NodeStatusOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  if (options.id.empty()) {
    return ListNodes(options, client, ui, id_length);
  }
  return ShowNode(options, client, ui, id_length);
}

}  // namespace drover::cli
