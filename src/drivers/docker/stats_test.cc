// Docker's stats as Nomad's ResourceUsage: a recorded sample (cgroup v1 names) and v2's.
#include "drivers/docker/stats.h"

#include <gtest/gtest.h>

namespace drover::drivers::docker {
namespace {

TEST(DockerStatsTest, MemoryAndCpuAsNomadReportsThem) {
  const codec::Json stats = codec::Json::parse(R"({
    "memory_stats": {"usage": 9000000, "max_usage": 12000000,
                     "stats": {"rss": 4000000, "cache": 2000000, "swap": 0}},
    "cpu_stats": {"cpu_usage": {"total_usage": 3000000000, "usage_in_kernelmode": 1000000000,
                                "usage_in_usermode": 2000000000},
                  "system_cpu_usage": 20000000000,
                  "throttling_data": {"periods": 10, "throttled_periods": 2,
                                      "throttled_time": 5000}},
    "precpu_stats": {"cpu_usage": {"total_usage": 1000000000, "usage_in_kernelmode": 500000000,
                                   "usage_in_usermode": 500000000},
                     "system_cpu_usage": 10000000000}})");
  absl::StatusOr<model::TaskResourceUsage> u = UsageFromStats(stats, 2, 77);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->timestamp, 77);
  EXPECT_EQ(u->memory.rss, 4000000u);
  EXPECT_EQ(u->memory.cache, 2000000u);
  EXPECT_EQ(u->memory.usage, 9000000u);
  EXPECT_EQ(u->memory.max_usage, 12000000u);
  // 2e9 of 10e9 system nanoseconds, on 2 cores: 40 % of one core.
  EXPECT_DOUBLE_EQ(u->cpu.percent, 40.0);
  EXPECT_DOUBLE_EQ(u->cpu.system_mode, 50.0);  // 0.5e9 of the task's 2e9, × 2 cores
  EXPECT_DOUBLE_EQ(u->cpu.user_mode, 150.0);
  EXPECT_EQ(u->cpu.throttled_periods, 2u);
  EXPECT_EQ(u->cpu.throttled_time, 5000u);

  // cgroup v2 names; a first sample (no precpu) counts from zero, as Nomad's does.
  const codec::Json v2 = codec::Json::parse(R"({
    "memory_stats": {"usage": 100, "stats": {"anon": 60, "file": 30}},
    "cpu_stats": {"cpu_usage": {"total_usage": 5}, "system_cpu_usage": 50},
    "precpu_stats": {}})");
  u = UsageFromStats(v2, 2, 1);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->memory.rss, 60u);
  EXPECT_EQ(u->memory.cache, 30u);
  EXPECT_DOUBLE_EQ(u->cpu.percent, 20.0);
  EXPECT_FALSE(
      UsageFromStats(codec::Json::parse(R"({"message": "no such container"})"), 2, 0).ok());
}

}  // namespace
}  // namespace drover::drivers::docker
