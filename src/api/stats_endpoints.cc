// GET /v1/client/allocation/:id/stats and GET /v1/client/stats: resource usage of an
// allocation's tasks (sampled by each task's stats hook) and of the node itself, with
// Nomad's field names. Device samples are spliced in as the JSON text the device
// manager encoded once when they arrived (devices/alloc_stats_json.h).
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "client/client.h"
#include "common/offload.h"
#include "devices/alloc_stats_json.h"

namespace drover::api {

namespace {

codec::Json MemoryJson(const drivers::MemoryUsage& m) {
  return {{"RSS", m.rss},        {"Cache", m.cache},        {"Swap", m.swap},
          {"Usage", m.usage},    {"MaxUsage", m.max_usage}, {"KernelUsage", 0},
          {"KernelMaxUsage", 0}, {"Measured", m.measured}};
}

// TotalTicks: the MHz in use, from the percentage of one core and the core's clock.
codec::Json CpuJson(const drivers::CpuUsage& c, double mhz) {
  return {{"SystemMode", c.system_mode},
          {"UserMode", c.user_mode},
          {"TotalTicks", c.percent / 100.0 * mhz},
          {"ThrottledPeriods", c.throttled_periods},
          {"ThrottledTime", c.throttled_time},
          {"Percent", c.percent},
          {"Measured", c.measured}};
}

codec::Json UsageJson(const drivers::MemoryUsage& m, const drivers::CpuUsage& c, double mhz) {
  return {{"MemoryStats", MemoryJson(m)},
          {"CpuStats", CpuJson(c, mhz)},
          {"DeviceStats", codec::Json::array()}};
}

// UsageJson's text with DeviceStats given as encoded JSON.
std::string UsageText(const drivers::MemoryUsage& m, const drivers::CpuUsage& c, double mhz,
                      std::string_view device_stats) {
  return codec::RawObject({{"CpuStats", codec::Dump(CpuJson(c, mhz))},
                           {"DeviceStats", std::string(device_stats)},
                           {"MemoryStats", codec::Dump(MemoryJson(m))}});
}

// The DeviceStats of the instances allocated to `task`: one index lookup per allocated
// instance, never a scan of the host's devices.
std::string TaskDeviceStats(devices::AllocDeviceStatsJson* devices, const model::Allocation& alloc,
                            const std::string& task) {
  auto it = alloc.allocated_resources.tasks.find(task);
  if (devices == nullptr || it == alloc.allocated_resources.tasks.end() ||
      it->second.devices.empty())
    return "[]";
  return devices->Task(it->second.devices);
}

codec::Json DiskJson(const client::HostDiskStats& d) {
  return {{"Device", d.device},
          {"Mountpoint", d.mountpoint},
          {"Size", d.size},
          {"Used", d.used},
          {"Available", d.available},
          {"UsedPercent", d.used_percent},
          {"InodesUsedPercent", d.inodes_used_percent}};
}

double CoreMhz(const model::Node& node) {
  auto it = node.attributes.find("cpu.frequency");
  return it == node.attributes.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
}

// The body of GET /v1/client/allocation/:id/stats. Synchronous: the device samples it
// points into cannot change while it is built.
std::string AllocStatsBody(const client::Client& client, allocrunner::AllocRunner& runner) {
  const double mhz = CoreMhz(client.node());
  std::optional<devices::AllocDeviceStatsJson> devices;
  if (const devices::DeviceManager* dm = client.device_manager(); dm != nullptr)
    devices.emplace(*dm);
  const std::shared_ptr<const model::Allocation> alloc = runner.alloc();
  // The client sums the tasks' usage; this only encodes it.
  const allocrunner::AllocUsage usage = runner.Usage();
  std::map<std::string, std::string> tasks;
  for (const auto& [name, u] : usage.tasks) {
    codec::Json pids = nullptr;
    if (!u.pids.empty()) {
      pids = codec::Json::object();
      for (const auto& [pid, p] : u.pids)
        pids[pid] = UsageJson(p.memory, p.cpu, mhz);
    }
    const std::string task_devices = TaskDeviceStats(devices ? &*devices : nullptr, *alloc, name);
    tasks[name] =
        codec::RawObject({{"Pids", codec::Dump(pids)},
                          {"ResourceUsage", UsageText(u.memory, u.cpu, mhz, task_devices)},
                          {"Timestamp", std::to_string(u.timestamp)}});
  }
  // Instances of one device model used by different tasks form one group.
  return codec::RawObject({{"ResourceUsage", UsageText(usage.memory, usage.cpu, mhz,
                                                       devices ? devices->Alloc() : "[]")},
                           {"Tasks", codec::RawObject(tasks)},
                           {"Timestamp", std::to_string(usage.timestamp)}});
}

}  // namespace

void RegisterStatsRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/client/allocation/:id/stats",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               allocrunner::AllocRunner* runner =
                   ctx.client ? ctx.client->GetAllocRunner(req.Param("id")) : nullptr;
               if (runner == nullptr || runner->destroyed())
                 co_return Response::Error(404, "Unknown allocation \"" + req.Param("id") + "\"");
               co_return JsonTextResponse(req, AllocStatsBody(*ctx.client, *runner), 0);
             });
  router.Add({"GET"}, "/v1/client/stats", [&ctx](Request& req) -> asio::awaitable<Response> {
    if (ctx.client == nullptr)
      co_return Response::Error(400, "No local client and no node_id to forward to");
    if (const std::string node = req.Query("node_id");
        !node.empty() && node != ctx.client->node().id) {
      co_return Response::Error(404, "Unknown node \"" + node + "\"");
    }
    client::HostStatsCollector* collector = &ctx.client->host_stats();
    auto work = [collector] { return collector->Collect(); };
    const client::HostStats s = co_await OffloadRequestWork(ctx, std::move(work));
    codec::Json cpus = codec::Json::array();
    for (const auto& c : s.cpus) {
      cpus.push_back({{"CPU", c.cpu},
                      {"User", c.user},
                      {"System", c.system},
                      {"Idle", c.idle},
                      {"Total", c.total}});
    }
    codec::Json disks = codec::Json::array();
    for (const auto& d : s.disks)
      disks.push_back(DiskJson(d));
    codec::Json body = {{"Memory",
                         {{"Total", s.memory_total},
                          {"Available", s.memory_available},
                          {"Used", s.memory_used},
                          {"Free", s.memory_free}}},
                        {"CPU", cpus},
                        {"DiskStats", disks},
                        {"AllocDirStats", DiskJson(s.alloc_dir)},
                        {"Uptime", s.uptime_seconds},
                        {"Timestamp", s.timestamp},
                        {"CPUTicksConsumed", s.cpu_ticks_consumed}};
    std::map<std::string, std::string> members;
    for (const auto& [key, value] : body.items())
      members[key] = codec::Dump(value);
    const devices::DeviceManager* dm = ctx.client->device_manager();
    members["DeviceStats"] = dm == nullptr ? "[]" : dm->AllStatsJson();
    co_return JsonTextResponse(req, codec::RawObject(members), 0);
  });
}

}  // namespace drover::api
