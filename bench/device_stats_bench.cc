// device_stats: the cost of answering GET /v1/client/allocation/:id/stats's device part
// for 100 allocations (one task each) on a node with 64 GPU instances, with each task
// holding 1 and then 8 instances.
//   ours   the device manager's index: one lookup per allocated instance (StatsFor),
//          then the alloc-level merge.
//   scan   Nomad's method, same run: every host instance is visited for every task
//          and kept when the task holds it, then the same merge.
// "find" is the lookup alone (references to the samples); "lookup" adds copying them
// and the merge, which both pay alike; "+json" adds encoding the alloc's DeviceStats,
// also alike. Also checks that plugin stats calls per interval equal the number of
// plugins, whatever the number of tasks reading stats. Targets (issue 7): ours >= 5x
// faster than scan at 64 host devices; 1 stats call per plugin per interval.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/clock.h"
#include "devices/device_manager.h"

namespace {

using namespace std::chrono_literals;  // NOLINT
using drover::model::AllocatedDeviceResource;
using drover::model::DeviceGroupStats;
using SteadyClock = std::chrono::steady_clock;

constexpr int kHostDevices = 64;
constexpr int kAllocs = 100;

// 64 GPUs of one model with NVML-like statistics.
class SyntheticGpus final : public drover::devices::DevicePlugin {
 public:
  std::string Name() const override { return "bench"; }
  absl::StatusOr<std::vector<drover::model::NodeDeviceResource>> Fingerprint() override {
    drover::model::NodeDeviceResource g{.vendor = "nvidia", .type = "gpu", .name = "H100"};
    g.attributes["memory"] = drover::model::Attribute::Int(81559, "MiB");
    for (int i = 0; i < kHostDevices; ++i)
      g.instances.push_back({.id = Id(i), .healthy = true});
    return std::vector{g};
  }
  absl::StatusOr<drover::devices::ContainerReservation> Reserve(
      const std::vector<std::string>&) override {
    return drover::devices::ContainerReservation{};
  }
  absl::StatusOr<std::vector<DeviceGroupStats>> Stats() override {
    DeviceGroupStats g{.vendor = "nvidia", .type = "gpu", .name = "H100"};
    for (int i = 0; i < kHostDevices; ++i) {
      drover::model::DeviceStats s;
      s.timestamp = 1'700'000'000'000'000'000;
      s.summary = {
          .int_numerator = 1000 + i, .int_denominator = 81559, .unit = "MiB", .desc = "UsedMemory"};
      auto& a = s.stats.attributes;
      a["GPU utilization"] = {.int_numerator = i % 100, .unit = "%", .desc = "GPU utilization"};
      a["Memory utilization"] = {.int_numerator = 40, .unit = "%", .desc = "Memory utilization"};
      a["Temperature"] = {.int_numerator = 61, .unit = "C", .desc = "Temperature"};
      a["Power usage"] = {
          .int_numerator = 301, .int_denominator = 700, .unit = "W", .desc = "Power usage"};
      g.instance_stats[Id(i)] = std::move(s);
    }
    return std::vector{g};
  }
  static std::string Id(int i) { return "GPU-5b8c" + std::to_string(1000 + i) + "-a1b2-c3d4"; }
};

// Nomad's per-task lookup: visit every host instance, keep the task's.
std::vector<DeviceGroupStats> ScanFor(const std::vector<DeviceGroupStats>& host,
                                      const std::vector<AllocatedDeviceResource>& devices) {
  std::vector<DeviceGroupStats> out;
  for (const AllocatedDeviceResource& d : devices) {
    const std::set<std::string> ids(d.device_ids.begin(), d.device_ids.end());
    for (const DeviceGroupStats& g : host) {
      if (g.vendor != d.vendor || g.type != d.type || g.name != d.name)
        continue;
      DeviceGroupStats kept{.vendor = g.vendor, .type = g.type, .name = g.name};
      for (const auto& [id, s] : g.instance_stats) {
        if (ids.contains(id))
          kept.instance_stats.emplace(id, s);
      }
      if (!kept.instance_stats.empty())
        out.push_back(std::move(kept));
    }
  }
  return out;
}

// The scan's lookup alone: the samples of the task's instances, found by visiting
// every host instance (no copy, like FindSamples).
size_t ScanFind(const std::vector<DeviceGroupStats>& host,
                const std::vector<AllocatedDeviceResource>& devices) {
  size_t found = 0;
  for (const AllocatedDeviceResource& d : devices) {
    const std::set<std::string> ids(d.device_ids.begin(), d.device_ids.end());
    for (const DeviceGroupStats& g : host) {
      if (g.vendor != d.vendor || g.type != d.type || g.name != d.name)
        continue;
      for (const auto& [id, s] : g.instance_stats) {
        if (ids.contains(id))
          found += s.timestamp != 0;
      }
    }
  }
  return found;
}

// Nanoseconds per alloc of the fastest of repeated passes over all allocs.
template <typename Fn>
double BestNsPerAlloc(Fn fn) {
  double best = 1e300;
  const auto end = SteadyClock::now() + 1500ms;
  for (int round = 0; SteadyClock::now() < end || round < 5; ++round) {
    const auto start = SteadyClock::now();
    size_t sink = 0;
    for (int a = 0; a < kAllocs; ++a)
      sink += fn(a);
    const double ns = std::chrono::duration<double, std::nano>(SteadyClock::now() - start).count();
    best = std::min(best, ns / kAllocs);
    if (sink == 0)
      std::fprintf(stderr, "device_stats: nothing found\n");
  }
  return best;
}

void Emit(const char* workload, int per_task, double ours, double scan) {
  nlohmann::ordered_json j = {{"bench", "device_stats"},
                              {"workload", workload},
                              {"host_devices", kHostDevices},
                              {"allocs", kAllocs},
                              {"devices_per_task", per_task},
                              {"unit", "ns/alloc"},
                              {"value", ours},
                              {"baseline", scan},
                              {"ratio", scan / ours},
                              {"target", 5.0}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

// Drives `io` until `pred` holds (plugin calls run on the manager's own threads).
bool Drive(boost::asio::io_context& io, const std::function<bool()>& pred) {
  const auto end = SteadyClock::now() + 10s;
  while (!pred()) {
    if (SteadyClock::now() > end)
      return false;
    io.restart();
    io.run_for(1ms);
  }
  return true;
}

}  // namespace

int main() {
  // The clock outlives the loop: coroutine frames the loop still holds at exit
  // unregister from it when destroyed.
  drover::common::FakeClock clock;
  boost::asio::io_context io;
  std::vector<drover::devices::ConfiguredPlugin> plugins = {
      {.plugin = std::make_shared<SyntheticGpus>()}};
  drover::devices::DeviceManager manager(io.get_executor(), clock, std::move(plugins),
                                         {.stats_interval = 1s});
  manager.Start();
  if (!Drive(io, [&] { return !manager.AllStats().empty(); })) {
    std::fprintf(stderr, "device_stats: no stats from the plugin\n");
    return 1;
  }
  // Stats calls per interval, with every alloc's stats read 10 times per interval.
  for (int p : {1, 8}) {
    std::vector<std::vector<AllocatedDeviceResource>> allocs(kAllocs);
    for (int a = 0; a < kAllocs; ++a) {
      AllocatedDeviceResource d{.vendor = "nvidia", .type = "gpu", .name = "H100"};
      for (int k = 0; k < p; ++k)
        d.device_ids.push_back(SyntheticGpus::Id((a * p + k) % kHostDevices));
      allocs[a] = {d};
    }
    const std::vector<DeviceGroupStats> host = manager.AllStats();
    auto ours = [&](int a) {
      return drover::model::MergeDeviceGroupStats(manager.StatsFor(allocs[a])).size();
    };
    auto scan = [&](int a) {
      return drover::model::MergeDeviceGroupStats(ScanFor(host, allocs[a])).size();
    };
    auto ours_json = [&](int a) {
      return drover::codec::DeviceGroupStatsJson(
                 drover::model::MergeDeviceGroupStats(manager.StatsFor(allocs[a])))
          .dump()
          .size();
    };
    auto scan_json = [&](int a) {
      return drover::codec::DeviceGroupStatsJson(
                 drover::model::MergeDeviceGroupStats(ScanFor(host, allocs[a])))
          .dump()
          .size();
    };
    auto ours_find = [&](int a) {
      size_t found = 0;
      manager.FindSamples(allocs[a],
                          [&](const AllocatedDeviceResource&, const std::string&,
                              const drover::model::DeviceStats& s) { found += s.timestamp != 0; });
      return found;
    };
    auto scan_find = [&](int a) { return ScanFind(host, allocs[a]); };
    Emit("find", p, BestNsPerAlloc(ours_find), BestNsPerAlloc(scan_find));
    Emit("lookup", p, BestNsPerAlloc(ours), BestNsPerAlloc(scan));
    Emit("lookup+json", p, BestNsPerAlloc(ours_json), BestNsPerAlloc(scan_json));

    const uint64_t before = manager.stats_calls();
    constexpr int kIntervals = 10;
    for (int i = 0; i < kIntervals; ++i) {
      for (int r = 0; r < 10; ++r) {
        for (int a = 0; a < kAllocs; ++a)
          (void)manager.StatsFor(allocs[a]);
      }
      clock.Advance(1s);
      if (!Drive(io, [&] { return manager.stats_calls() >= before + i + 1; }))
        return 1;
    }
    nlohmann::ordered_json calls = {
        {"bench", "device_stats"},
        {"workload", "stats_calls_per_interval"},
        {"plugins", 1},
        {"tasks", kAllocs},
        {"devices_per_task", p},
        {"value", static_cast<double>(manager.stats_calls() - before) / kIntervals},
        {"target", 1.0}};
    std::printf("%s\n", calls.dump().c_str());
  }
  bool stopped = false;
  drover::common::SpawnDetached(
      io.get_executor(),
      [](drover::devices::DeviceManager* m, bool* done) -> boost::asio::awaitable<void> {
        co_await m->Stop();
        *done = true;
      }(&manager, &stopped),
      "stop");
  Drive(io, [&] { return stopped; });
  return 0;
}
