#include "client/allocrunner/alloc_usage.h"

#include <gtest/gtest.h>

namespace drover::allocrunner {
namespace {

TEST(AllocUsageTest, TheAllocationsUsageIsTheSumOfItsTasks) {
  drivers::TaskResourceUsage web;
  web.memory = {.rss = 100, .cache = 10, .swap = 1, .usage = 120, .max_usage = 150};
  web.memory.measured = {"RSS", "Cache"};
  web.cpu.percent = 12.5;
  web.cpu.user_mode = 3;
  web.cpu.throttled_periods = 2;
  web.timestamp = 1000;
  drivers::TaskResourceUsage sidecar;
  sidecar.memory = {.rss = 50, .cache = 5, .swap = 0, .usage = 60, .max_usage = 70};
  sidecar.cpu.percent = 2.5;
  sidecar.cpu.system_mode = 1;
  sidecar.timestamp = 2000;
  AllocUsage u = SumUsage({{"web", web}, {"sidecar", sidecar}});
  EXPECT_EQ(u.memory.rss, 150u);
  EXPECT_EQ(u.memory.cache, 15u);
  EXPECT_EQ(u.memory.usage, 180u);
  EXPECT_EQ(u.memory.max_usage, 220u);
  EXPECT_DOUBLE_EQ(u.cpu.percent, 15.0);
  EXPECT_DOUBLE_EQ(u.cpu.user_mode, 3);
  EXPECT_DOUBLE_EQ(u.cpu.system_mode, 1);
  EXPECT_EQ(u.cpu.throttled_periods, 2u);
  EXPECT_EQ(u.memory.measured, (std::vector<std::string>{"RSS", "Cache"}));
  EXPECT_EQ(u.timestamp, 2000);
  EXPECT_EQ(u.tasks.size(), 2u);
  EXPECT_EQ(SumUsage({}).timestamp, 0);
}

TEST(AllocUsageTest, TotalTicksAreTheMhzInUseAtEveryLevel) {
  drivers::TaskResourceUsage web;
  web.cpu.percent = 50;
  web.pids["42"].cpu.percent = 25;
  AllocUsage u = SumUsage({{"web", web}});
  FillTotalTicks(u, 2000);
  EXPECT_DOUBLE_EQ(u.cpu.total_ticks, 1000);
  EXPECT_DOUBLE_EQ(u.tasks["web"].cpu.total_ticks, 1000);
  EXPECT_DOUBLE_EQ(u.tasks["web"].pids["42"].cpu.total_ticks, 500);
}

}  // namespace
}  // namespace drover::allocrunner
