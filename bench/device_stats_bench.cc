// device_stats: the cost of answering GET /v1/client/allocation/:id/stats's device part
// for 100 allocations (one task each) on a node with 64 GPU instances, with each task
// holding 1 and then 8 instances.
//   ours   what the endpoint does (AllocDeviceStatsJson): one index lookup per
//          allocated instance, then the sample's JSON, encoded once when it arrived, is
//          copied into the task's and the alloc's DeviceStats.
//   scan   Nomad's method, same run: every host instance is visited for every task and
//          kept when the task holds it; the task's groups are encoded, then merged and
//          encoded again for the alloc.
// Both produce the same bytes (checked before timing). Workloads:
//   find     the lookup alone (references to the samples), index vs scan;
//   request  the whole device part of the response, ours vs scan (target >= 5x);
//   request_encode_each_time  the index with samples encoded per request (what this
//            did before samples were pre-encoded) vs scan: how much is the encoding's.
// Also checks that plugin stats calls per interval equal the number of plugins,
// whatever the number of tasks reading stats (target 1).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/clock.h"
#include "devices/alloc_stats_json.h"
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
    const int64_t answer = ++answers_;
    for (int i = 0; i < kHostDevices; ++i) {
      drover::model::DeviceStats s;
      s.timestamp = kEpoch + answer;
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
  // Each answer's samples carry its number in their timestamp.
  static constexpr int64_t kEpoch = 1'700'000'000'000'000'000;
  int64_t answers() const { return answers_; }

 private:
  std::atomic<int64_t> answers_{0};
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

void Emit(const char* workload, int per_task, double ours, double scan,
          std::optional<double> target) {
  nlohmann::ordered_json j = {{"bench", "device_stats"},
                              {"workload", workload},
                              {"host_devices", kHostDevices},
                              {"allocs", kAllocs},
                              {"devices_per_task", per_task},
                              {"unit", "ns/alloc"},
                              {"value", ours},
                              {"baseline", scan},
                              {"ratio", scan / ours},
                              {"target", target ? nlohmann::ordered_json(*target) : nullptr}};
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
  auto gpus = std::make_shared<SyntheticGpus>();
  std::vector<drover::devices::ConfiguredPlugin> plugins = {{.plugin = gpus}};
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
    // The task's and the alloc's DeviceStats, as the endpoint writes them.
    auto ours = [&](int a) {
      drover::devices::AllocDeviceStatsJson json(manager);
      std::string text = json.Task(allocs[a]);  // before Alloc, which shows what Task found
      return text + json.Alloc();
    };
    auto scan = [&](int a) {
      std::vector<DeviceGroupStats> task = ScanFor(host, allocs[a]);
      std::string text = drover::codec::Dump(drover::codec::DeviceGroupStatsJson(task));
      return text + drover::codec::Dump(drover::codec::DeviceGroupStatsJson(
                        drover::model::MergeDeviceGroupStats(std::move(task))));
    };
    auto ours_encoding = [&](int a) {
      std::vector<DeviceGroupStats> task = manager.StatsFor(allocs[a]);
      std::string text = drover::codec::Dump(drover::codec::DeviceGroupStatsJson(task));
      return text + drover::codec::Dump(drover::codec::DeviceGroupStatsJson(
                        drover::model::MergeDeviceGroupStats(std::move(task))));
    };
    for (int a = 0; a < kAllocs; ++a) {
      if (ours(a) != scan(a) || ours_encoding(a) != scan(a)) {
        std::fprintf(stderr, "device_stats: methods disagree for alloc %d:\n%s\n%s\n", a,
                     ours(a).c_str(), scan(a).c_str());
        return 1;
      }
    }
    auto ours_find = [&](int a) {
      size_t found = 0;
      manager.FindSamples(allocs[a], [&](const AllocatedDeviceResource&,
                                         const drover::devices::StatsSnapshot::Sample& s) {
        found += s.stats->timestamp != 0;
      });
      return found;
    };
    auto scan_find = [&](int a) { return ScanFind(host, allocs[a]); };
    auto size = [](auto fn) { return [fn](int a) { return fn(a).size(); }; };
    Emit("find", p, BestNsPerAlloc(ours_find), BestNsPerAlloc(scan_find), std::nullopt);
    Emit("request", p, BestNsPerAlloc(size(ours)), BestNsPerAlloc(size(scan)), 5.0);
    Emit("request_encode_each_time", p, BestNsPerAlloc(size(ours_encoding)),
         BestNsPerAlloc(size(scan)), std::nullopt);

    const uint64_t before = manager.stats_calls();
    const int64_t answered = gpus->answers();
    // The latest answer the manager has published (its samples' timestamp).
    auto published = [&] {
      int64_t latest = 0;
      manager.FindSamples(allocs[0], [&](const AllocatedDeviceResource&,
                                         const drover::devices::StatsSnapshot::Sample& s) {
        latest = s.stats->timestamp - SyntheticGpus::kEpoch;
      });
      return latest;
    };
    constexpr int kIntervals = 10;
    for (int i = 0; i < kIntervals; ++i) {
      for (int r = 0; r < 10; ++r) {
        for (int a = 0; a < kAllocs; ++a)
          (void)manager.StatsFor(allocs[a]);
      }
      clock.Advance(1s);
      // Published, not only called: the next sleep starts only then, and the clock
      // must not move before it does.
      if (!Drive(io, [&] { return published() >= answered + i + 1; })) {
        std::fprintf(stderr, "device_stats: no stats published in interval %d\n", i);
        return 1;
      }
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
