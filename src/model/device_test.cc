#include "model/device.h"

#include <gtest/gtest.h>

#include "model/node.h"

namespace drover::model {
namespace {

TEST(AttributeTest, ParsesNumbersUnitsBoolsAndStrings) {
  EXPECT_EQ(ParseAttribute("4 GiB"), Attribute::Int(4, "GiB"));
  EXPECT_EQ(ParseAttribute("4GiB"), Attribute::Int(4, "GiB"));
  EXPECT_EQ(ParseAttribute(" 1.5 GHz "), Attribute::Float(1.5, "GHz"));
  EXPECT_EQ(ParseAttribute("-3"), Attribute::Int(-3));
  EXPECT_EQ(ParseAttribute("true"), Attribute::Bool(true));
  EXPECT_EQ(ParseAttribute("Tesla T4"), Attribute::String("Tesla T4"));
  // An unknown unit makes it text, as does a lone sign or dot.
  EXPECT_EQ(ParseAttribute("4 apples"), Attribute::String("4 apples"));
  EXPECT_EQ(ParseAttribute("-"), Attribute::String("-"));
  EXPECT_EQ(ParseAttribute("."), Attribute::String("."));
  EXPECT_EQ(ParseAttribute("1.2.3"), Attribute::String("1.2.3"));
  EXPECT_EQ(Attribute::Int(16, "GiB").ToString(), "16 GiB");
  EXPECT_EQ(Attribute::Float(1.5).ToString(), "1.5");
}

TEST(AttributeTest, ComparesAcrossUnitsOfOneKind) {
  EXPECT_EQ(CompareAttributes(ParseAttribute("4 GiB"), ParseAttribute("4096 MiB")), 0);
  EXPECT_EQ(CompareAttributes(ParseAttribute("4 GB"), ParseAttribute("4 GiB")), -1);
  EXPECT_EQ(CompareAttributes(ParseAttribute("2 kW"), ParseAttribute("1999 W")), 1);
  EXPECT_EQ(CompareAttributes(ParseAttribute("250000 mW"), ParseAttribute("250 W")), 0);
  EXPECT_EQ(CompareAttributes(ParseAttribute("1.5 GHz"), ParseAttribute("1500 MHz")), 0);
  // A bare number takes the other side's unit.
  EXPECT_EQ(CompareAttributes(ParseAttribute("8 GiB"), ParseAttribute("4")), 1);
  EXPECT_EQ(CompareAttributes(ParseAttribute("4 GiB"), ParseAttribute("4 W")), std::nullopt);
  EXPECT_EQ(CompareAttributes(ParseAttribute("4"), ParseAttribute("four")), std::nullopt);
  EXPECT_EQ(CompareAttributes(ParseAttribute("a"), ParseAttribute("b")), -1);
  EXPECT_EQ(CompareAttributes(ParseAttribute("true"), ParseAttribute("true")), 0);
}

TEST(DeviceNameTest, MatchesTypeVendorTypeOrFullName) {
  NodeDeviceResource g{.vendor = "nvidia", .type = "gpu", .name = "Tesla T4"};
  EXPECT_TRUE(DeviceNameMatches("gpu", g));
  EXPECT_TRUE(DeviceNameMatches("nvidia/gpu", g));
  EXPECT_TRUE(DeviceNameMatches("nvidia/gpu/Tesla T4", g));
  EXPECT_FALSE(DeviceNameMatches("fpga", g));
  EXPECT_FALSE(DeviceNameMatches("amd/gpu", g));
  EXPECT_FALSE(DeviceNameMatches("nvidia/gpu/A100", g));
  EXPECT_FALSE(DeviceNameMatches("nvidia", g));
}

TEST(DeviceStatsTest, MergesGroupsOfOneModel) {
  DeviceStats s1{.summary = {}, .stats = {}, .timestamp = 1};
  DeviceStats s2{.summary = {}, .stats = {}, .timestamp = 2};
  std::vector<DeviceGroupStats> in = {
      {.vendor = "nvidia", .type = "gpu", .name = "T4", .instance_stats = {{"a", s1}}},
      {.vendor = "intel", .type = "fpga", .name = "X", .instance_stats = {{"f", s1}}},
      {.vendor = "nvidia", .type = "gpu", .name = "T4", .instance_stats = {{"b", s2}}}};
  auto out = MergeDeviceGroupStats(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].instance_stats.size(), 2u);
  EXPECT_EQ(out[0].instance_stats.at("b").timestamp, 2);
  EXPECT_EQ(out[1].vendor, "intel");
}

Node GpuNode() {
  Node n;
  n.datacenter = "dc1";
  n.attributes = {{"kernel.name", "linux"}, {"unique.hostname", "h1"}};
  n.node_resources.devices = {{.vendor = "nvidia",
                               .type = "gpu",
                               .name = "T4",
                               .instances = {{.id = "GPU-0", .healthy = true}},
                               .attributes = {{"memory", Attribute::Int(16, "GiB")}}}};
  return n;
}

TEST(ComputedClassTest, IgnoresInstancesHealthAndUniqueKeys) {
  const Node base = GpuNode();
  const std::string cls = ComputeNodeClass(base);
  EXPECT_EQ(cls.rfind("v1:", 0), 0u);
  Node n = base;
  n.node_resources.devices[0].instances.push_back({.id = "GPU-1", .healthy = true});
  n.node_resources.devices[0].instances[0].healthy = false;
  n.node_resources.devices[0].instances[0].locality = DeviceLocality{.pci_bus_id = "00:1e.0"};
  n.attributes["unique.hostname"] = "h2";
  n.id = "other";
  n.name = "other";
  EXPECT_EQ(ComputeNodeClass(n), cls);
}

TEST(ComputedClassTest, ChangesWithAttributesDevicesAndPlacementFields) {
  const std::string cls = ComputeNodeClass(GpuNode());
  Node n = GpuNode();
  n.node_resources.devices[0].attributes["memory"] = Attribute::Int(32, "GiB");
  EXPECT_NE(ComputeNodeClass(n), cls);
  n = GpuNode();
  n.node_resources.devices.clear();
  EXPECT_NE(ComputeNodeClass(n), cls);
  n = GpuNode();
  n.attributes["kernel.name"] = "darwin";
  EXPECT_NE(ComputeNodeClass(n), cls);
  n = GpuNode();
  n.node_class = "gpu";
  EXPECT_NE(ComputeNodeClass(n), cls);
  n = GpuNode();
  n.meta["rack"] = "r1";
  EXPECT_NE(ComputeNodeClass(n), cls);
}

}  // namespace
}  // namespace drover::model
