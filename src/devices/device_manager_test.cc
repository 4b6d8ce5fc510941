#include "devices/device_manager.h"

#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/offload.h"
#include "devices/alloc_stats_json.h"
#include "testing/test_util.h"

namespace drover::devices {
namespace {

using namespace std::chrono_literals;  // NOLINT

// A scripted plugin. Thread-safe: the manager calls it from pool threads.
class FakePlugin final : public DevicePlugin {
 public:
  explicit FakePlugin(std::string name) : name_(std::move(name)) {}
  std::string Name() const override { return name_; }

  absl::StatusOr<std::vector<model::NodeDeviceResource>> Fingerprint() override {
    std::unique_lock lock(mu_);
    ++fingerprints_;
    ++in_call_;
    cv_.wait(lock, [&] { return !hang_; });
    --in_call_;
    return fingerprint_;
  }
  absl::StatusOr<ContainerReservation> Reserve(const std::vector<std::string>& ids) override {
    std::lock_guard lock(mu_);
    ContainerReservation r;
    r.envs["IDS_" + name_] = ids.empty() ? "" : ids[0];
    return r;
  }
  absl::StatusOr<std::vector<model::DeviceGroupStats>> Stats() override {
    std::lock_guard lock(mu_);
    ++stats_calls_;
    return stats_;
  }
  void Reset() override {
    std::lock_guard lock(mu_);
    ++resets_;
  }

  void SetFingerprint(absl::StatusOr<std::vector<model::NodeDeviceResource>> f) {
    std::lock_guard lock(mu_);
    fingerprint_ = std::move(f);
  }
  void SetStats(std::vector<model::DeviceGroupStats> s) {
    std::lock_guard lock(mu_);
    stats_ = std::move(s);
  }
  void SetHang(bool hang) {
    std::lock_guard lock(mu_);
    hang_ = hang;
    cv_.notify_all();
  }
  int fingerprints() const { return Get(fingerprints_); }
  int stats_calls() const { return Get(stats_calls_); }
  int resets() const { return Get(resets_); }
  int in_call() const { return Get(in_call_); }

 private:
  int Get(const int& v) const {
    std::lock_guard lock(mu_);
    return v;
  }
  const std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  absl::StatusOr<std::vector<model::NodeDeviceResource>> fingerprint_ =
      std::vector<model::NodeDeviceResource>{};
  std::vector<model::DeviceGroupStats> stats_;
  bool hang_ = false;
  int fingerprints_ = 0, stats_calls_ = 0, resets_ = 0, in_call_ = 0;
};

model::NodeDeviceResource Gpus(std::vector<std::string> ids, int64_t memory_gib = 16) {
  model::NodeDeviceResource g{.vendor = "nvidia", .type = "gpu", .name = "T4"};
  g.attributes["memory"] = model::Attribute::Int(memory_gib, "GiB");
  for (auto& id : ids)
    g.instances.push_back({.id = id, .healthy = true});
  return g;
}

model::DeviceGroupStats GpuStats(const std::vector<std::string>& ids, int64_t used) {
  model::DeviceGroupStats g{.vendor = "nvidia", .type = "gpu", .name = "T4"};
  for (const auto& id : ids) {
    model::DeviceStats s;
    s.summary.int_numerator = used;
    s.timestamp = 1;
    g.instance_stats[id] = s;
  }
  return g;
}

class DeviceManagerTest : public ::testing::Test {
 protected:
  // `call_timeout`: long where the test advances the clock while calls may be in
  // flight on a loaded machine.
  void Make(std::vector<std::shared_ptr<FakePlugin>> plugins, common::Duration call_timeout = 2s) {
    plugins_ = plugins;
    std::vector<ConfiguredPlugin> configured;
    for (auto& p : plugins)
      configured.push_back({.plugin = p, .fingerprint_period = 5s});
    manager_ = std::make_unique<DeviceManager>(io_.get_executor(), clock_, std::move(configured),
                                               DeviceManagerConfig{.fingerprint_period = 5s,
                                                                   .stats_interval = 1s,
                                                                   .call_timeout = call_timeout,
                                                                   .backoff_initial = 1s,
                                                                   .backoff_max = 4s});
    manager_->Start();
  }
  void TearDown() override {
    if (manager_ == nullptr)
      return;
    bool stopped = false;
    common::SpawnDetached(
        io_.get_executor(),
        [](DeviceManager* m, bool* done) -> asio::awaitable<void> {
          co_await m->Stop();
          *done = true;
        }(manager_.get(), &stopped),
        "stop");
    EXPECT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] { return stopped; }));
    for (auto& p : plugins_)
      p->SetHang(false);  // so that the manager's threads can be joined
    manager_.reset();
  }
  bool Run(const std::function<bool()>& pred) {
    return testing::RunWithFakeClock(io_, clock_, pred);
  }
  bool WaitForFirstFingerprint() {
    bool waited = false;
    common::SpawnDetached(
        io_.get_executor(),
        [](DeviceManager* m, bool* done) -> asio::awaitable<void> {
          co_await m->WaitForFirstFingerprint(30s);
          *done = true;
        }(manager_.get(), &waited),
        "wait");
    return Run([&] { return waited; });
  }
  bool AllHealthy(bool want) {
    auto d = manager_->Devices();
    if (d.empty())
      return false;
    for (const auto& g : d) {
      for (const auto& i : g.instances) {
        if (i.healthy != want)
          return false;
      }
    }
    return true;
  }

  common::FakeClock clock_;  // outlives io_, whose frames may still sleep on it
  asio::io_context io_;
  std::vector<std::shared_ptr<FakePlugin>> plugins_;
  std::unique_ptr<DeviceManager> manager_;
};

TEST_F(DeviceManagerTest, PublishesFingerprintsAndWaitsForTheFirst) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0", "GPU-1"})});
  Make({gpu});
  ASSERT_TRUE(WaitForFirstFingerprint());
  ASSERT_EQ(manager_->Devices().size(), 1u);
  EXPECT_EQ(manager_->Devices()[0].instances.size(), 2u);
  EXPECT_TRUE(manager_->changed().pending());
}

TEST_F(DeviceManagerTest, OneStatsCallPerPluginPerIntervalWhateverTheReaders) {
  auto a = std::make_shared<FakePlugin>("a");
  auto b = std::make_shared<FakePlugin>("b");
  a->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  b->SetFingerprint(std::vector{model::NodeDeviceResource{
      .vendor = "x", .type = "fpga", .name = "F", .instances = {{.id = "F-0", .healthy = true}}}});
  a->SetStats({GpuStats({"GPU-0"}, 5)});
  Make({a, b}, std::chrono::hours(1));
  // Nothing runnable and no call out: every loop is asleep, so the clock may move.
  auto settled = [&] {
    io_.restart();
    return io_.poll() == 0 && common::OffloadsInFlight() == 0;
  };
  ASSERT_TRUE(Run([&] { return a->stats_calls() >= 1 && b->stats_calls() >= 1; }));
  ASSERT_TRUE(testing::RunUntil(io_, settled));
  const common::Time start = clock_.Now();
  const uint64_t before = manager_->stats_calls();
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(1s);
    // Many readers between samples cost no plugin calls.
    for (int r = 0; r < 100; ++r)
      manager_->StatsFor({{"nvidia", "gpu", "T4", {"GPU-0"}}});
    ASSERT_TRUE(testing::RunUntil(io_, settled));
    EXPECT_EQ(manager_->stats_calls(), before + 2 * (i + 1));
  }
  EXPECT_EQ(clock_.Now() - start, 10s);
  EXPECT_EQ(manager_->stats_calls(), before + 20);
}

TEST_F(DeviceManagerTest, StatsForReturnsExactlyTheAllocatedInstances) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0", "GPU-1", "GPU-2"})});
  gpu->SetStats({GpuStats({"GPU-0", "GPU-1", "GPU-2"}, 7)});
  Make({gpu});
  ASSERT_TRUE(Run([&] { return !manager_->AllStats().empty(); }));
  auto s = manager_->StatsFor({{"nvidia", "gpu", "T4", {"GPU-2", "GPU-9"}}});
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].instance_stats.size(), 1u);
  EXPECT_EQ(s[0].instance_stats.at("GPU-2").summary.int_numerator, 7);
  EXPECT_TRUE(manager_->StatsFor({{"amd", "gpu", "T4", {"GPU-0"}}}).empty());
  EXPECT_EQ(manager_->AllStats()[0].instance_stats.size(), 3u);
}

// The endpoints' JSON is spliced from samples encoded once; it must be exactly what
// encoding the same samples per request gives.
TEST_F(DeviceManagerTest, PreEncodedStatsJsonEqualsEncodingPerRequest) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  model::NodeDeviceResource fpgas{.vendor = "xilinx", .type = "fpga", .name = "U50 \"x\""};
  fpgas.instances.push_back({.id = "F\u00e9-0", .healthy = true});
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0", "GPU-1", "GPU-2", "GPU-3"}), fpgas});
  model::DeviceGroupStats fpga_stats{.vendor = "xilinx", .type = "fpga", .name = "U50 \"x\""};
  fpga_stats.instance_stats["F\u00e9-0"].stats.attributes["temp"] = {.float_numerator = 40.5,
                                                                     .unit = "C"};
  gpu->SetStats({GpuStats({"GPU-0", "GPU-1", "GPU-2", "GPU-3"}, 7), fpga_stats});
  Make({gpu});
  ASSERT_TRUE(Run([&] { return !manager_->AllStats().empty(); }));
  auto encoded = [](const std::vector<model::DeviceGroupStats>& g) {
    return codec::Dump(codec::DeviceGroupStatsJson(g));
  };
  EXPECT_EQ(manager_->AllStatsJson(), encoded(manager_->AllStats()));

  // Two tasks of one alloc: ids out of order, an unknown id, a second model.
  const std::vector<model::AllocatedDeviceResource> web = {
      {"nvidia", "gpu", "T4", {"GPU-3", "GPU-9", "GPU-1"}}};
  const std::vector<model::AllocatedDeviceResource> db = {
      {"nvidia", "gpu", "T4", {"GPU-0"}}, {"xilinx", "fpga", "U50 \"x\"", {"F\u00e9-0"}}};
  AllocDeviceStatsJson json(*manager_);
  EXPECT_EQ(json.Task(web), encoded(manager_->StatsFor(web)));
  EXPECT_EQ(json.Task(db), encoded(manager_->StatsFor(db)));
  EXPECT_EQ(json.Task({{"amd", "gpu", "T4", {"GPU-0"}}}), "[]");
  std::vector<model::DeviceGroupStats> all = manager_->StatsFor(web);
  for (model::DeviceGroupStats& g : manager_->StatsFor(db))
    all.push_back(std::move(g));
  const std::string alloc = json.Alloc();
  EXPECT_EQ(alloc, encoded(model::MergeDeviceGroupStats(all)));
  // One group per model: the GPUs of both tasks together, then the FPGA.
  const codec::Json parsed = codec::Json::parse(alloc);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["InstanceStats"].size(), 3u);
  EXPECT_EQ(
      parsed[1]["InstanceStats"]["F\u00e9-0"]["Stats"]["Attributes"]["temp"]["FloatNumeratorVal"],
      40.5);
  EXPECT_EQ(AllocDeviceStatsJson(*manager_).Alloc(), "[]");
}

TEST_F(DeviceManagerTest, FailingPluginMarksDevicesUnhealthyAndRecovers) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  gpu->SetStats({GpuStats({"GPU-0"}, 1)});
  Make({gpu});
  ASSERT_TRUE(Run([&] { return AllHealthy(true) && !manager_->AllStats().empty(); }));
  gpu->SetFingerprint(absl::UnavailableError("driver crashed"));
  ASSERT_TRUE(Run([&] { return AllHealthy(false); }));
  const model::DeviceInstance inst = manager_->Devices()[0].instances[0];
  EXPECT_EQ(inst.health_description, "device plugin 'gpu' failed: driver crashed");
  EXPECT_TRUE(manager_->AllStats().empty());  // stale samples are dropped
  ASSERT_TRUE(Run([&] { return gpu->resets() >= 1; }));
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  ASSERT_TRUE(Run([&] { return AllHealthy(true); }));
  EXPECT_TRUE(manager_->Devices()[0].instances[0].health_description.empty());
}

TEST_F(DeviceManagerTest, MalformedFingerprintIsAFailure) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  Make({gpu});
  ASSERT_TRUE(Run([&] { return AllHealthy(true); }));
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0", "GPU-0"})});
  ASSERT_TRUE(Run([&] { return AllHealthy(false); }));
  EXPECT_NE(manager_->Devices()[0].instances[0].health_description.find("reported twice"),
            std::string::npos);
  EXPECT_TRUE(ValidateDeviceGroups({model::NodeDeviceResource{.vendor = "v", .type = "t"}})
                  .message()
                  .find("lacks a vendor, type or name") != std::string::npos);
}

TEST_F(DeviceManagerTest, HungPluginIsAbandonedAndReset) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  Make({gpu});
  ASSERT_TRUE(Run([&] { return AllHealthy(true); }));
  gpu->SetHang(true);
  clock_.Advance(5s);  // the next fingerprint is due, and hangs
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return gpu->in_call() == 1; }));
  clock_.Advance(2s);  // the call's deadline
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return AllHealthy(false); }));
  EXPECT_NE(manager_->Devices()[0].instances[0].health_description.find("no answer within"),
            std::string::npos);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return gpu->resets() >= 1; }));
  // While the call is stuck the plugin is not called again (one thread at most).
  const int calls = gpu->fingerprints();
  clock_.Advance(5s);  // past the backoff: the next fingerprint is due
  ASSERT_TRUE(testing::RunUntil(io_, [&] {
    return manager_->Devices()[0].instances[0].health_description.find("has not returned") !=
           std::string::npos;
  }));
  EXPECT_EQ(gpu->fingerprints(), calls);
  EXPECT_EQ(gpu->in_call(), 1);
  gpu->SetHang(false);
  ASSERT_TRUE(Run([&] { return AllHealthy(true); }));
}

TEST_F(DeviceManagerTest, VanishedInstanceStaysListedUnhealthy) {
  auto gpu = std::make_shared<FakePlugin>("gpu");
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0", "GPU-1"})});
  Make({gpu});
  ASSERT_TRUE(Run([&] { return AllHealthy(true); }));
  gpu->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  ASSERT_TRUE(Run([&] {
    auto d = manager_->Devices();
    return d.size() == 1 && d[0].instances.size() == 2 && !d[0].instances[1].healthy;
  }));
  const auto d = manager_->Devices();
  EXPECT_EQ(d[0].instances[1].id, "GPU-1");
  EXPECT_EQ(d[0].instances[1].health_description, "no longer reported by device plugin 'gpu'");
  EXPECT_TRUE(d[0].instances[0].healthy);
}

TEST_F(DeviceManagerTest, UnavailablePluginHasNoDevicesAndIsNotAnError) {
  auto gpu = std::make_shared<FakePlugin>("nvidia");
  gpu->SetFingerprint(absl::FailedPreconditionError("NVML not found"));
  Make({gpu});
  ASSERT_TRUE(WaitForFirstFingerprint());
  EXPECT_TRUE(manager_->Devices().empty());
  EXPECT_EQ(gpu->resets(), 0);
}

TEST_F(DeviceManagerTest, ReserveGoesToThePluginThatOwnsTheInstances) {
  auto a = std::make_shared<FakePlugin>("a");
  auto b = std::make_shared<FakePlugin>("b");
  a->SetFingerprint(std::vector{Gpus({"GPU-0"})});
  b->SetFingerprint(std::vector{Gpus({"GPU-7"}, 32)});
  Make({a, b});
  ASSERT_TRUE(Run([&] { return manager_->Devices().size() == 2; }));
  std::optional<absl::StatusOr<ContainerReservation>> got, unknown;
  auto reserve =
      [](DeviceManager* m, model::AllocatedDeviceResource d,
         std::optional<absl::StatusOr<ContainerReservation>>* out) -> asio::awaitable<void> {
    *out = co_await m->Reserve(std::move(d));
  };
  common::SpawnDetached(io_.get_executor(),
                        reserve(manager_.get(), {"nvidia", "gpu", "T4", {"GPU-7"}}, &got), "r");
  common::SpawnDetached(
      io_.get_executor(),
      reserve(manager_.get(), {"nvidia", "gpu", "T4", {"GPU-0", "GPU-7"}}, &unknown), "r");
  ASSERT_TRUE(Run([&] { return got.has_value() && unknown.has_value(); }));
  ASSERT_TRUE(got->ok()) << got->status();
  EXPECT_EQ((*got)->envs.at("IDS_b"), "GPU-7");
  ASSERT_TRUE(absl::IsNotFound(unknown->status()));
  EXPECT_EQ(unknown->status().message(),
            "operation on unknown device(s) \"nvidia/gpu/T4\" (GPU-0, GPU-7)");
}

}  // namespace
}  // namespace drover::devices
