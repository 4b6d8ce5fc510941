// The node's stats sampler: one loop samples every registered task each interval.
#include "client/taskrunner/stats_sampler.h"

#include <gtest/gtest.h>

#include "drivers/driver.h"

namespace drover::taskrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT

// Only reports usage, counting TaskStats calls per task id; "no-stats" cannot report
// usage at all and "gone" is not found.
class StatsOnlyDriver : public drivers::Driver {
 public:
  std::string Name() const override { return "stats-only"; }
  drivers::Capabilities GetCapabilities() const override { return {}; }
  drivers::DriverFingerprint Fingerprint() const override { return {}; }
  absl::Status RecoverTask(const drivers::TaskHandle&) override { return Unsupported(); }
  asio::awaitable<absl::StatusOr<drivers::TaskHandle>> StartTask(
      const drivers::TaskConfig&) override {
    co_return Unsupported();
  }
  asio::awaitable<absl::StatusOr<drivers::ExitResult>> WaitTask(const std::string&) override {
    co_return Unsupported();
  }
  asio::awaitable<absl::Status> StopTask(const std::string&, drivers::Duration,
                                         const std::string&) override {
    co_return Unsupported();
  }
  absl::Status DestroyTask(const std::string&, bool) override { return Unsupported(); }
  absl::StatusOr<drivers::TaskStatus> InspectTask(const std::string&) const override {
    return Unsupported();
  }
  absl::Status SignalTask(const std::string&, const std::string&) override { return Unsupported(); }
  absl::StatusOr<drivers::TaskResourceUsage> TaskStats(const std::string& task_id) override {
    ++calls[task_id];
    if (task_id == "no-stats")
      return absl::UnimplementedError("no stats");
    if (task_id == "gone")
      return absl::NotFoundError("task not found for given id");
    drivers::TaskResourceUsage u;
    u.timestamp = calls[task_id];
    return u;
  }
  std::map<std::string, int> calls;

 private:
  static absl::Status Unsupported() { return absl::UnimplementedError("not in this test"); }
};

class StatsSamplerTest : public ::testing::Test {
 protected:
  // Lets the loop reach its sleep, advances the fake clock by one interval and runs
  // what became ready.
  void Tick() {
    ctx_.poll();
    ctx_.restart();
    clock_.Advance(1s);
    ctx_.poll();
    ctx_.restart();
  }

  common::FakeClock clock_;  // outlives ctx_, whose coroutines may sleep on it
  asio::io_context ctx_;
  StatsOnlyDriver driver_;
  std::shared_ptr<StatsSampler> sampler_ = StatsSampler::Create(ctx_.get_executor(), clock_, 1s);
};

TEST_F(StatsSamplerTest, SamplesEveryTaskAtOnceThenEachIntervalWithOneTimer) {
  std::map<std::string, int64_t> latest;
  for (const char* id : {"a", "b", "c"}) {
    sampler_->Add(&driver_, id,
                  [&latest, id](drivers::TaskResourceUsage u) { latest[id] = u.timestamp; });
  }
  EXPECT_EQ(latest, (std::map<std::string, int64_t>{{"a", 1}, {"b", 1}, {"c", 1}}));
  ctx_.poll();
  ctx_.restart();
  EXPECT_EQ(clock_.sleepers(), 1u);  // one timer for the node, not one per task
  Tick();
  Tick();
  EXPECT_EQ(latest, (std::map<std::string, int64_t>{{"a", 3}, {"b", 3}, {"c", 3}}));
}

TEST_F(StatsSamplerTest, ARemovedTaskIsNotSampledAndTheLoopEndsWithTheLastOne) {
  int a = 0;
  int b = 0;
  const uint64_t ka = sampler_->Add(&driver_, "a", [&a](drivers::TaskResourceUsage) { ++a; });
  const uint64_t kb = sampler_->Add(&driver_, "b", [&b](drivers::TaskResourceUsage) { ++b; });
  Tick();
  sampler_->Remove(ka);
  Tick();
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 3);
  sampler_->Remove(kb);
  sampler_->Remove(kb);  // twice: ignored
  ctx_.poll();
  ctx_.restart();
  EXPECT_EQ(clock_.sleepers(), 0u);
  EXPECT_EQ(sampler_->size(), 0u);
  // Added again after the loop ended: sampled again every interval.
  sampler_->Add(&driver_, "a", [&a](drivers::TaskResourceUsage) { ++a; });
  Tick();
  EXPECT_EQ(a, 4);
}

TEST_F(StatsSamplerTest, ATaskWhoseDriverCannotReportUsageIsDroppedAndOthersGoOn) {
  int ok = 0;
  sampler_->Add(&driver_, "no-stats",
                [](drivers::TaskResourceUsage) { FAIL() << "no sample expected"; });
  sampler_->Add(&driver_, "gone",
                [](drivers::TaskResourceUsage) { FAIL() << "no sample expected"; });
  sampler_->Add(&driver_, "a", [&ok](drivers::TaskResourceUsage) { ++ok; });
  Tick();
  Tick();
  EXPECT_EQ(driver_.calls["no-stats"], 1);
  EXPECT_EQ(driver_.calls["gone"], 3);  // not found now, maybe found later: kept
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(sampler_->size(), 2u);
}

TEST_F(StatsSamplerTest, ALongPassYieldsToTheLoopAndSeesRemovalsMadeMeanwhile) {
  std::vector<uint64_t> keys;
  std::map<int, int> samples;
  for (int i = 0; i < 200; ++i) {
    keys.push_back(sampler_->Add(&driver_, "t" + std::to_string(i),
                                 [&samples, i](drivers::TaskResourceUsage) { ++samples[i]; }));
  }
  ctx_.poll();
  ctx_.restart();
  clock_.Advance(1s);
  // Run the pass one handler at a time: it must yield before it has sampled all 200.
  bool removed = false;
  while (ctx_.run_one() > 0) {
    int sampled_twice = 0;
    for (const auto& [i, n] : samples)
      sampled_twice += n == 2;
    if (!removed && sampled_twice > 0 && sampled_twice < 200) {
      sampler_->Remove(keys.back());  // not sampled yet in this pass
      removed = true;
    }
    if (sampled_twice + (removed ? 1 : 0) == 200)
      break;
  }
  ASSERT_TRUE(removed) << "the pass never yielded";
  EXPECT_EQ(samples[199], 1);
  EXPECT_EQ(samples[0], 2);
}

}  // namespace
}  // namespace drover::taskrunner
