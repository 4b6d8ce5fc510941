// Nodes: the full object and the NodeListStub.
#include <string>

#include "codec/internal/json_util.h"
#include "codec/internal/model_json.h"
#include "codec/json.h"

namespace drover::codec {

namespace {

using internal::Reader;

Json DriversJson(const std::map<std::string, model::DriverInfo>& drivers) {
  return internal::MapObject(drivers, [](const model::DriverInfo& d) {
    return Json{{"Attributes", internal::StringMapOrNull(d.attributes)},
                {"Detected", d.detected},
                {"Healthy", d.healthy},
                {"HealthDescription", d.health_description},
                {"UpdateTime", FormatTime(d.update_time)}};
  });
}

Json DevicesOrNull(const std::vector<model::NodeDeviceResource>& devices) {
  if (devices.empty())
    return nullptr;
  Json out = Json::array();
  for (const model::NodeDeviceResource& d : devices)
    out.push_back(ToJson(d));
  return out;
}

// "127.0.0.1:4646" -> "127.0.0.1"; "[::1]:4646" -> "::1"; no port -> unchanged.
std::string HostOf(const std::string& addr) {
  if (!addr.empty() && addr.front() == '[') {
    const size_t close = addr.find(']');
    return close == std::string::npos ? addr : addr.substr(1, close - 1);
  }
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || addr.find(':') != colon) {
    return addr;  // no port, or a bare IPv6 address
  }
  return addr.substr(0, colon);
}

absl::StatusOr<model::DriverInfo> DecodeDriverInfo(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::DriverInfo d;
  if (!r.ExpectObject()) {
    return r.status();
  }
  r.Read("Attributes", d.attributes);
  r.Read("Detected", d.detected);
  r.Read("Healthy", d.healthy);
  r.Read("HealthDescription", d.health_description);
  r.Read("UpdateTime", d.update_time);
  if (!r.ok()) {
    return r.status();
  }
  return d;
}

// Reads `outer.<key>.<field>` (Nomad nests each resource in its own object).
void ReadNested(Reader& outer, std::string_view key, std::string_view field, int64_t& out) {
  const Json* v = outer.Get(key);
  if (v == nullptr) {
    return;
  }
  Reader inner(*v, outer.Path(key));
  if (inner.ExpectObject()) {
    inner.Read(field, out);
  }
  outer.Fail(inner.status());
}

absl::StatusOr<model::NodeResources> DecodeNodeResources(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::NodeResources res;
  if (!r.ExpectObject()) {
    return r.status();
  }
  ReadNested(r, "Cpu", "CpuShares", res.cpu_shares);
  ReadNested(r, "Cpu", "TotalCpuCores", res.total_cores);
  ReadNested(r, "Memory", "MemoryMB", res.memory_mb);
  ReadNested(r, "Disk", "DiskMB", res.disk_mb);
  r.ReadList("Networks", res.networks, internal::DecodeNetwork);
  r.ReadList("Devices", res.devices, NodeDeviceFromJson);
  r.Read("MinDynamicPort", res.min_dynamic_port);
  r.Read("MaxDynamicPort", res.max_dynamic_port);
  if (!r.ok()) {
    return r.status();
  }
  return res;
}

absl::StatusOr<model::NodeReservedResources> DecodeReserved(const Json& j,
                                                            const std::string& path) {
  Reader r(j, path);
  model::NodeReservedResources res;
  if (!r.ExpectObject()) {
    return r.status();
  }
  ReadNested(r, "Cpu", "CpuShares", res.cpu_shares);
  ReadNested(r, "Memory", "MemoryMB", res.memory_mb);
  ReadNested(r, "Disk", "DiskMB", res.disk_mb);
  if (const Json* net = r.Get("Networks"); net != nullptr) {
    Reader n(*net, r.Path("Networks"));
    if (n.ExpectObject()) {
      n.Read("ReservedHostPorts", res.reserved_host_ports);
    }
    r.Fail(n.status());
  }
  if (!r.ok()) {
    return r.status();
  }
  return res;
}

Json DrainStrategyJson(const std::optional<model::DrainStrategy>& d) {
  if (!d)
    return nullptr;
  return Json{{"Deadline", d->deadline.count()},
              {"ForceDeadline", FormatTime(d->force_deadline)},
              {"IgnoreSystemJobs", d->ignore_system_jobs},
              {"StartedAt", FormatTime(d->started_at)}};
}

Json LastDrainJson(const std::optional<model::DrainMetadata>& d) {
  if (!d)
    return nullptr;
  return Json{{"StartedAt", FormatTime(d->started_at)},
              {"UpdatedAt", FormatTime(d->updated_at)},
              {"Status", d->status},
              {"AccessorID", ""},
              {"Meta", internal::StringMapOrNull(d->meta)},
              {"IgnoreSystemJobs", d->ignore_system_jobs}};
}

absl::StatusOr<model::DrainStrategy> DecodeDrainStrategy(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::DrainStrategy d;
  if (!r.ExpectObject())
    return r.status();
  r.Read("Deadline", d.deadline);
  r.Read("ForceDeadline", d.force_deadline);
  r.Read("IgnoreSystemJobs", d.ignore_system_jobs);
  r.Read("StartedAt", d.started_at);
  if (!r.ok())
    return r.status();
  return d;
}

absl::StatusOr<model::DrainMetadata> DecodeLastDrain(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::DrainMetadata d;
  if (!r.ExpectObject())
    return r.status();
  r.Read("StartedAt", d.started_at);
  r.Read("UpdatedAt", d.updated_at);
  r.Read("Status", d.status);
  r.Read("Meta", d.meta);
  r.Read("IgnoreSystemJobs", d.ignore_system_jobs);
  if (!r.ok())
    return r.status();
  return d;
}

absl::StatusOr<model::NodeEvent> DecodeNodeEvent(const Json& j, const std::string& path) {
  Reader r(j, path);
  model::NodeEvent e;
  if (!r.ExpectObject())
    return r.status();
  r.Read("Message", e.message);
  r.Read("Subsystem", e.subsystem);
  r.Read("Details", e.details);
  r.Read("Timestamp", e.timestamp);
  r.Read("CreateIndex", e.create_index);
  if (!r.ok())
    return r.status();
  return e;
}

}  // namespace

Json ToJson(const model::NodeEvent& e) {
  return Json{{"Message", e.message},
              {"Subsystem", e.subsystem},
              {"Details", e.details.empty() ? Json(nullptr) : internal::StringMapObject(e.details)},
              {"Timestamp", FormatTime(e.timestamp)},
              {"CreateIndex", e.create_index}};
}

absl::StatusOr<model::NodeEvent> NodeEventFromJson(const Json& j) {
  return internal::NoThrow([&] { return DecodeNodeEvent(j, "NodeEvent"); });
}

Json ToJson(const model::Node& n) {
  const model::NodeResources& res = n.node_resources;
  const model::NodeReservedResources& rsv = n.reserved_resources;
  Json j = Json::object();
  j["ID"] = n.id;
  j["SecretID"] = "";  // never leave the server
  j["Datacenter"] = n.datacenter;
  j["Name"] = n.name;
  j["HTTPAddr"] = n.http_addr;
  j["TLSEnabled"] = false;
  j["Attributes"] = internal::StringMapObject(n.attributes);
  j["NodeResources"] = Json{{"Cpu", Json{{"CpuShares", res.cpu_shares},
                                         {"TotalCpuCores", res.total_cores},
                                         {"ReservableCpuCores", nullptr}}},
                            {"Memory", Json{{"MemoryMB", res.memory_mb}}},
                            {"Disk", Json{{"DiskMB", res.disk_mb}}},
                            {"Networks", internal::NetworksOrNull(res.networks)},
                            {"NodeNetworks", nullptr},
                            {"Devices", DevicesOrNull(res.devices)},
                            {"MinDynamicPort", res.min_dynamic_port},
                            {"MaxDynamicPort", res.max_dynamic_port}};
  j["ReservedResources"] = Json{{"Cpu", Json{{"CpuShares", rsv.cpu_shares}}},
                                {"Memory", Json{{"MemoryMB", rsv.memory_mb}}},
                                {"Disk", Json{{"DiskMB", rsv.disk_mb}}},
                                {"Networks", Json{{"ReservedHostPorts", rsv.reserved_host_ports}}}};
  j["Links"] = nullptr;
  j["Meta"] = internal::StringMapObject(n.meta);
  j["NodeClass"] = n.node_class;
  j["NodePool"] = n.node_pool;
  j["CgroupParent"] = "";
  j["ComputedClass"] = n.computed_class;
  j["Drain"] = n.drain;
  j["DrainStrategy"] = DrainStrategyJson(n.drain_strategy);
  j["SchedulingEligibility"] = n.scheduling_eligibility;
  j["Status"] = n.status;
  j["StatusDescription"] = n.status_description;
  j["StatusUpdatedAt"] = n.status_updated_at;
  Json events = Json::array();
  for (const model::NodeEvent& e : n.events)
    events.push_back(ToJson(e));
  j["Events"] = std::move(events);
  j["Drivers"] = DriversJson(n.drivers);
  j["CSIControllerPlugins"] = nullptr;
  j["CSINodePlugins"] = nullptr;
  j["HostVolumes"] = nullptr;
  j["HostNetworks"] = nullptr;
  j["LastDrain"] = LastDrainJson(n.last_drain);
  j["CreateIndex"] = n.create_index;
  j["ModifyIndex"] = n.modify_index;
  return j;
}

Json NodeStubJson(const model::Node& n) {
  Json j = Json::object();
  j["Address"] = HostOf(n.http_addr);
  j["ID"] = n.id;
  // Attributes, NodeResources and ReservedResources only when asked for (?os=true),
  // as Nomad's omitempty fields.
  j["Datacenter"] = n.datacenter;
  j["Name"] = n.name;
  j["NodeClass"] = n.node_class;
  j["NodePool"] = n.node_pool;
  auto version = n.attributes.find("nomad.version");
  j["Version"] = version == n.attributes.end() ? "" : version->second;
  j["Drain"] = n.drain;
  j["SchedulingEligibility"] = n.scheduling_eligibility;
  j["Status"] = n.status;
  j["StatusDescription"] = n.status_description;
  j["Drivers"] = DriversJson(n.drivers);
  j["HostVolumes"] = nullptr;
  j["LastDrain"] = LastDrainJson(n.last_drain);
  j["CreateIndex"] = n.create_index;
  j["ModifyIndex"] = n.modify_index;
  return j;
}

absl::StatusOr<model::Node> NodeFromJson(const Json& j) {
  return internal::NoThrow([&]() -> absl::StatusOr<model::Node> {
    Reader r(j, "Node");
    model::Node n;
    if (!r.ExpectObject()) {
      return r.status();
    }
    r.Read("ID", n.id);
    r.Read("SecretID", n.secret_id);
    r.Read("Datacenter", n.datacenter);
    r.Read("Name", n.name);
    r.Read("HTTPAddr", n.http_addr);
    r.Read("Attributes", n.attributes);
    r.ReadObject("NodeResources", n.node_resources, DecodeNodeResources);
    r.ReadObject("ReservedResources", n.reserved_resources, DecodeReserved);
    r.Read("Meta", n.meta);
    r.Read("NodeClass", n.node_class);
    r.Read("NodePool", n.node_pool);
    r.Read("ComputedClass", n.computed_class);
    r.Read("Drain", n.drain);
    r.ReadOptional("DrainStrategy", n.drain_strategy, DecodeDrainStrategy);
    r.ReadOptional("LastDrain", n.last_drain, DecodeLastDrain);
    r.Read("SchedulingEligibility", n.scheduling_eligibility);
    r.Read("Status", n.status);
    r.Read("StatusDescription", n.status_description);
    r.Read("StatusUpdatedAt", n.status_updated_at);
    r.ReadMap("Drivers", n.drivers, DecodeDriverInfo);
    r.ReadList("Events", n.events, DecodeNodeEvent);
    r.Read("CreateIndex", n.create_index);
    r.Read("ModifyIndex", n.modify_index);
    if (!r.ok()) {
      return r.status();
    }
    return n;
  });
}

}  // namespace drover::codec
