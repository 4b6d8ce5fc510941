// GET /v1/client/allocation/:id/stats and GET /v1/client/stats: resource usage of an
// allocation's tasks (sampled by each task's stats hook) and of the node itself, with
// Nomad's field names. Device samples are spliced in as the JSON text the client gives
// (the device manager encodes it once when samples arrive).
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "common/offload.h"

namespace drover::api {

namespace {

codec::Json MemoryJson(const model::MemoryUsage& m) {
  return {{"RSS", m.rss},        {"Cache", m.cache},        {"Swap", m.swap},
          {"Usage", m.usage},    {"MaxUsage", m.max_usage}, {"KernelUsage", 0},
          {"KernelMaxUsage", 0}, {"Measured", m.measured}};
}

codec::Json CpuJson(const model::CpuUsage& c) {
  return {{"SystemMode", c.system_mode},
          {"UserMode", c.user_mode},
          {"TotalTicks", c.total_ticks},
          {"ThrottledPeriods", c.throttled_periods},
          {"ThrottledTime", c.throttled_time},
          {"Percent", c.percent},
          {"Measured", c.measured}};
}

codec::Json UsageJson(const model::MemoryUsage& m, const model::CpuUsage& c) {
  return {{"MemoryStats", MemoryJson(m)},
          {"CpuStats", CpuJson(c)},
          {"DeviceStats", codec::Json::array()}};
}

// UsageJson's text with DeviceStats given as encoded JSON.
std::string UsageText(const model::MemoryUsage& m, const model::CpuUsage& c,
                      std::string_view device_stats) {
  return codec::RawObject({{"CpuStats", codec::Dump(CpuJson(c))},
                           {"DeviceStats", std::string(device_stats)},
                           {"MemoryStats", codec::Dump(MemoryJson(m))}});
}

codec::Json DiskJson(const model::HostDiskStats& d) {
  return {{"Device", d.device},
          {"Mountpoint", d.mountpoint},
          {"Size", d.size},
          {"Used", d.used},
          {"Available", d.available},
          {"UsedPercent", d.used_percent},
          {"InodesUsedPercent", d.inodes_used_percent}};
}

// The body of GET /v1/client/allocation/:id/stats.
std::string AllocStatsBody(const AllocStats& stats) {
  const model::AllocUsage& usage = stats.usage;
  std::map<std::string, std::string> tasks;
  for (const auto& [name, u] : usage.tasks) {
    codec::Json pids = nullptr;
    if (!u.pids.empty()) {
      pids = codec::Json::object();
      for (const auto& [pid, p] : u.pids)
        pids[pid] = UsageJson(p.memory, p.cpu);
    }
    auto devices = stats.task_devices.find(name);
    const std::string task_devices = devices == stats.task_devices.end() ? "[]" : devices->second;
    tasks[name] = codec::RawObject({{"Pids", codec::Dump(pids)},
                                    {"ResourceUsage", UsageText(u.memory, u.cpu, task_devices)},
                                    {"Timestamp", std::to_string(u.timestamp)}});
  }
  return codec::RawObject({{"ResourceUsage", UsageText(usage.memory, usage.cpu, stats.devices)},
                           {"Tasks", codec::RawObject(tasks)},
                           {"Timestamp", std::to_string(usage.timestamp)}});
}

}  // namespace

void RegisterStatsRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/client/allocation/:id/stats",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               if (ctx.client == nullptr)
                 co_return ErrorResponse(UnknownAllocation(req.Param("id")));
               auto stats = ctx.client->AllocStatsOf(req.Param("id"));
               if (!stats.ok())
                 co_return ErrorResponse(stats.status());
               co_return JsonTextResponse(req, AllocStatsBody(*stats), 0);
             });
  router.Add({"GET"}, "/v1/client/stats", [&ctx](Request& req) -> asio::awaitable<Response> {
    if (ctx.client == nullptr)
      co_return Response::Error(400, "No local client and no node_id to forward to");
    if (const std::string node = req.Query("node_id");
        !node.empty() && node != ctx.client->node_id()) {
      co_return Response::Error(404, "Unknown node \"" + node + "\"");
    }
    std::function<model::HostStats()> work = ctx.client->HostStatsCollector();
    const model::HostStats s = co_await OffloadRequestWork(ctx, std::move(work));
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
    members["DeviceStats"] = ctx.client->DeviceStatsJson();
    co_return JsonTextResponse(req, codec::RawObject(members), 0);
  });
}

}  // namespace drover::api
