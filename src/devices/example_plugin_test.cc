#include "devices/example_plugin.h"

#include <fstream>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::devices {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

constexpr char kGpu[] = R"(# a fake GPU
vendor = nvidia
type = gpu
name = "Fake T4"
attr.memory = 16 GiB
pci_bus_id = 0000:3b:00.0
stat.utilization = 35 %
stat.memory_used = 1200/16384 MiB
summary = memory_used
)";

TEST(ExamplePluginTest, GroupsIdenticalInstancesAndReportsHealth) {
  testing::TempDir dir;
  Write(dir.path() / "GPU-0", kGpu);
  Write(dir.path() / "GPU-1", std::string(kGpu) + "healthy = false\nhealth_description = hot\n");
  Write(dir.path() / "GPU-2",
        "vendor = nvidia\ntype = gpu\nname = Fake T4\nattr.memory = 32 GiB\n");
  Write(dir.path() / ".hidden", "not a device");
  std::filesystem::create_symlink("/etc/hostname", dir.path() / "link");  // never a device
  ExamplePlugin plugin({.dir = dir.path().string()});
  auto groups = plugin.Fingerprint();
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 2u);
  const model::NodeDeviceResource& g = (*groups)[0];
  EXPECT_EQ(g.IdString(), "nvidia/gpu/Fake T4");
  EXPECT_EQ(g.attributes.at("memory"), model::Attribute::Int(16, "GiB"));
  ASSERT_EQ(g.instances.size(), 2u);
  EXPECT_EQ(g.instances[0].id, "GPU-0");
  EXPECT_TRUE(g.instances[0].healthy);
  EXPECT_EQ(g.instances[0].locality->pci_bus_id, "0000:3b:00.0");
  EXPECT_FALSE(g.instances[1].healthy);
  EXPECT_EQ(g.instances[1].health_description, "hot");
  EXPECT_EQ((*groups)[1].instances[0].id, "GPU-2");
}

TEST(ExamplePluginTest, MalformedFilesNameTheFileAndLine) {
  testing::TempDir dir;
  Write(dir.path() / "GPU-0", "vendor = nvidia\ntype gpu\n");
  ExamplePlugin plugin({.dir = dir.path().string()});
  auto groups = plugin.Fingerprint();
  ASSERT_FALSE(groups.ok());
  EXPECT_NE(groups.status().message().find("GPU-0:2: expected \"key = value\""), std::string::npos)
      << groups.status();
  Write(dir.path() / "GPU-0", "vendor = nvidia\ntype = gpu\n");
  EXPECT_NE(plugin.Fingerprint().status().message().find("missing \"name\""), std::string::npos);
  Write(dir.path() / "GPU-0", "vendor = v\ntype = t\nname = n\ncolour = red\n");
  EXPECT_NE(plugin.Fingerprint().status().message().find("unknown key \"colour\""),
            std::string::npos);
  Write(dir.path() / "GPU-0", "vendor = v\ntype = t\nname = n\nsummary = nope\n");
  EXPECT_FALSE(plugin.Fingerprint().ok());
  EXPECT_FALSE(ExamplePlugin({.dir = (dir.path() / "missing").string()}).Fingerprint().ok());
}

TEST(ExamplePluginTest, ReserveSetsEnvAndMountsEachInstanceFile) {
  testing::TempDir dir;
  Write(dir.path() / "GPU-0", kGpu);
  Write(dir.path() / "GPU-1", kGpu);
  ExamplePlugin plugin({.dir = dir.path().string(), .env_var = "NVIDIA_VISIBLE_DEVICES"});
  auto r = plugin.Reserve({"GPU-1", "GPU-0"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-1,GPU-0");
  ASSERT_EQ(r->mounts.size(), 2u);
  EXPECT_EQ(r->mounts[0].task_path, "/dev-files/GPU-1");
  EXPECT_EQ(r->mounts[0].host_path, (dir.path() / "GPU-1").string());
  EXPECT_TRUE(r->mounts[0].read_only);
  EXPECT_TRUE(absl::IsNotFound(plugin.Reserve({"GPU-9"}).status()));
  EXPECT_TRUE(absl::IsNotFound(plugin.Reserve({"../etc/passwd"}).status()));
  EXPECT_FALSE(plugin.Reserve({}).ok());
}

TEST(ExamplePluginTest, StatsFollowTheFiles) {
  testing::TempDir dir;
  Write(dir.path() / "GPU-0", kGpu);
  ExamplePlugin plugin({.dir = dir.path().string()});
  auto stats = plugin.Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->size(), 1u);
  const model::DeviceStats& s = (*stats)[0].instance_stats.at("GPU-0");
  EXPECT_EQ(s.summary.int_numerator, 1200);
  EXPECT_EQ(s.summary.int_denominator, 16384);
  EXPECT_EQ(s.summary.unit, "MiB");
  EXPECT_EQ(s.stats.attributes.at("utilization").int_numerator, 35);
  EXPECT_EQ(s.stats.attributes.at("utilization").unit, "%");
  EXPECT_GT(s.timestamp, 0);
  std::string changed = kGpu;
  changed.replace(changed.find("35 %"), 4, "90 %");
  Write(dir.path() / "GPU-0", changed);
  EXPECT_EQ(plugin.Stats()
                ->at(0)
                .instance_stats.at("GPU-0")
                .stats.attributes.at("utilization")
                .int_numerator,
            90);
}

TEST(ExamplePluginTest, ParsesStatValues) {
  EXPECT_EQ(ParseStatValue("35%").int_numerator, 35);
  EXPECT_EQ(ParseStatValue("35%").unit, "%");
  EXPECT_EQ(ParseStatValue("0.5 W").float_numerator, 0.5);
  EXPECT_EQ(ParseStatValue("1.0/2 GiB").float_denominator, 2.0);
  EXPECT_EQ(ParseStatValue("true").bool_val, true);
  EXPECT_EQ(ParseStatValue("12abc").string_val, "12abc");
  EXPECT_EQ(ParseStatValue("P0 state").string_val, "P0 state");
}

}  // namespace
}  // namespace drover::devices
