// Cgroup layout detection and limits, against fake hierarchies in a temp dir (both
// versions, whatever this host has).
#include "supervisor/cgroups.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;

TEST(CgroupLayoutTest, HybridHostWithoutV2ControllersIsV1) {
  testing::TempDir dir;
  const fs::path unified = dir.path() / "unified";
  fs::create_directories(unified);
  std::ofstream(unified / "cgroup.controllers") << "";
  const std::string mountinfo =
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:5 - cgroup cgroup "
      "rw,cpu,cpuacct\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
      "41 31 0:38 / " +
      unified.string() + " rw,relatime - cgroup2 cgroup2 rw\n";
  const CgroupLayout l = CgroupLayout::Parse(mountinfo);
  EXPECT_EQ(l.mode, CgroupMode::kV1);
  EXPECT_EQ(l.v1_roots.at("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(l.v1_roots.at("cpu"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(l.v1_roots.at("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(l.v1_roots.at("pids"), "/sys/fs/cgroup/pids");
}

TEST(CgroupLayoutTest, V2WithMemoryControllerIsV2) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "cgroup.controllers") << "cpuset cpu io memory pids\n";
  const CgroupLayout l = CgroupLayout::Parse("25 1 0:22 / " + dir.path().string() +
                                             " rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  EXPECT_EQ(l.mode, CgroupMode::kV2);
  EXPECT_EQ(l.v2_root, dir.path());
  EXPECT_EQ(CgroupLayout::Parse("").mode, CgroupMode::kNone);
}

TEST(CgroupTest, V2LimitsAndUsage) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "cgroup.controllers") << "cpu memory pids\n";
  CgroupLayout l{.mode = CgroupMode::kV2, .v2_root = dir.path()};
  TaskCgroup cg(l, CgroupName("a1/web/0123abcd"));
  ASSERT_TRUE(cg.Create({.memory_bytes = 256 << 20,
                         .memory_soft_bytes = 128 << 20,
                         .cpu_shares = 500,
                         .pids_max = 64})
                  .ok());
  const fs::path d = dir.path() / "drover.slice" / "a1.web.0123abcd";
  EXPECT_EQ(testing::ReadFile(d / "memory.max"), std::to_string(256 << 20));
  EXPECT_EQ(testing::ReadFile(d / "memory.low"), std::to_string(128 << 20));
  EXPECT_EQ(testing::ReadFile(d / "cpu.weight"), std::to_string(SharesToWeight(500)));
  EXPECT_EQ(testing::ReadFile(d / "pids.max"), "64");
  EXPECT_EQ(cg.ProcsFiles(), std::vector<fs::path>{d / "cgroup.procs"});
  std::ofstream(d / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\n";
  EXPECT_FALSE(cg.OomKilled());
  std::ofstream(d / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
  EXPECT_TRUE(cg.OomKilled());
  std::ofstream(d / "memory.current") << "1000\n";
  std::ofstream(d / "memory.stat") << "anon 600\nfile 300\n";
  std::ofstream(d / "cpu.stat") << "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\n"
                                   "nr_throttled 4\nthrottled_usec 50\n";
  const CgroupUsage u = cg.Usage();
  EXPECT_EQ(u.memory_usage, 1000u);
  EXPECT_EQ(u.rss, 600u);
  EXPECT_EQ(u.cache, 300u);
  EXPECT_DOUBLE_EQ(u.cpu_user_seconds, 2.0);
  EXPECT_DOUBLE_EQ(u.cpu_total_seconds, 3.0);
  EXPECT_EQ(u.throttled_periods, 4u);
  EXPECT_EQ(u.throttled_time_ns, 50000u);
}

TEST(CgroupTest, V1LimitsGoToEachController) {
  testing::TempDir dir;
  CgroupLayout l{.mode = CgroupMode::kV1,
                 .v1_roots = {{"memory", dir.path() / "memory"},
                              {"cpu", dir.path() / "cpu"},
                              {"cpuacct", dir.path() / "cpuacct"},
                              {"pids", dir.path() / "pids"}}};
  TaskCgroup cg(l, "t");
  ASSERT_TRUE(cg.Create({.memory_bytes = 64 << 20, .cpu_shares = 100, .pids_max = 10}).ok());
  EXPECT_EQ(testing::ReadFile(dir.path() / "memory/drover/t/memory.limit_in_bytes"),
            std::to_string(64 << 20));
  EXPECT_FALSE(fs::exists(dir.path() / "memory/drover/t/memory.soft_limit_in_bytes"));
  EXPECT_EQ(testing::ReadFile(dir.path() / "cpu/drover/t/cpu.shares"), "100");
  EXPECT_EQ(testing::ReadFile(dir.path() / "pids/drover/t/pids.max"), "10");
  EXPECT_EQ(cg.ProcsFiles().size(), 4u);
  EXPECT_TRUE(absl::IsAlreadyExists(TaskCgroup(l, "t").Create({})));
  std::ofstream(dir.path() / "memory/drover/t/memory.oom_control")
      << "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
  EXPECT_TRUE(cg.OomKilled());
}

TEST(CgroupTest, WeightsFollowSystemdsConversion) {
  EXPECT_EQ(SharesToWeight(2), 1);
  EXPECT_EQ(SharesToWeight(1024), 39);
  EXPECT_EQ(SharesToWeight(262144), 10000);
  EXPECT_EQ(SharesToWeight(0), 100);
}

}  // namespace
}  // namespace drover::supervisor
