#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::codec {
namespace {

model::Node GpuNode() {
  model::Node n;
  n.id = "n1";
  n.computed_class = "v1:42";
  model::NodeDeviceResource g{.vendor = "nvidia", .type = "gpu", .name = "Tesla T4"};
  g.instances = {{.id = "GPU-0",
                  .healthy = true,
                  .health_description = "",
                  .locality = model::DeviceLocality{.pci_bus_id = "00000000:00:1E.0"}},
                 {.id = "GPU-1", .healthy = false, .health_description = "hot"}};
  g.attributes = {{"memory", model::Attribute::Int(15360, "MiB")},
                  {"driver_version", model::Attribute::String("550.54")}};
  n.node_resources.devices = {g};
  return n;
}

TEST(DeviceJsonTest, NodeDevicesUseNomadsShapeAndRoundTrip) {
  const model::Node n = GpuNode();
  const Json j = ToJson(n);
  EXPECT_EQ(j["ComputedClass"], "v1:42");
  const Json& d = j["NodeResources"]["Devices"][0];
  EXPECT_EQ(d["Vendor"], "nvidia");
  EXPECT_EQ(d["Instances"][0]["Locality"]["PciBusID"], "00000000:00:1E.0");
  EXPECT_TRUE(d["Instances"][1]["Locality"].is_null());
  EXPECT_EQ(d["Attributes"]["memory"],
            Json::parse(R"({"Float":null,"Int":15360,"String":null,"Bool":null,"Unit":"MiB"})"));
  auto back = NodeFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->node_resources.devices, n.node_resources.devices);
  EXPECT_EQ(back->computed_class, "v1:42");
  // No devices: null, as Nomad.
  EXPECT_TRUE(ToJson(model::Node{})["NodeResources"]["Devices"].is_null());
}

TEST(DeviceJsonTest, AttributesNeedExactlyOneValue) {
  Json j = ToJson(GpuNode());
  j["NodeResources"]["Devices"][0]["Attributes"]["memory"]["String"] = "x";
  auto r = NodeFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Node.NodeResources.Devices[0].Attributes[\"memory\"]: exactly one of Float, Int, "
            "String, Bool must be set");
}

TEST(DeviceJsonTest, StatsCarryFractionsUnitsAndNesting) {
  model::DeviceStats s;
  s.summary.int_numerator = 1200;
  s.summary.int_denominator = 16384;
  s.summary.unit = "MiB";
  s.stats.attributes["temperature"].float_numerator = 61.5;
  s.stats.nested["ecc"].attributes["errors"].int_numerator = 0;
  s.timestamp = 1'700'000'000'000'000'000;
  const Json j = DeviceGroupStatsJson(
      {{.vendor = "nvidia", .type = "gpu", .name = "T4", .instance_stats = {{"GPU-0", s}}}});
  const Json& i = j[0]["InstanceStats"]["GPU-0"];
  EXPECT_EQ(i["Summary"]["IntNumeratorVal"], 1200);
  EXPECT_EQ(i["Summary"]["IntDenominatorVal"], 16384);
  EXPECT_TRUE(i["Summary"]["FloatNumeratorVal"].is_null());
  EXPECT_EQ(i["Summary"]["Unit"], "MiB");
  EXPECT_EQ(i["Stats"]["Attributes"]["temperature"]["FloatNumeratorVal"], 61.5);
  EXPECT_EQ(i["Stats"]["Nested"]["ecc"]["Attributes"]["errors"]["IntNumeratorVal"], 0);
  EXPECT_EQ(i["Timestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(DeviceGroupStatsJson({}), Json::array());
}

// Responses splice these pieces instead of encoding samples again: together they must
// be byte for byte the group's encoding, escaping included.
TEST(DeviceJsonTest, GroupPiecesConcatenateToTheGroupsEncoding) {
  model::DeviceGroupStats g{.vendor = "acme\"",
                            .type = "gpu\n",
                            .name =
                                "T\xff"
                                "4"};
  g.instance_stats["GPU-\\1"].summary.int_numerator = 3;
  g.instance_stats["GPU-0"].stats.nested["ecc"].attributes["x"].bool_val = true;
  g.instance_stats["GPU-0"].timestamp = 1'700'000'000'000'000'000;
  std::string text(kDeviceGroupOpenJson);
  bool first = true;
  for (const auto& [id, s] : g.instance_stats) {
    if (!first)
      text += ",";
    first = false;
    text += DeviceStatsMemberJson(id, s);
  }
  text += DeviceGroupCloseJson(g.vendor, g.type, g.name);
  EXPECT_EQ(text, Dump(ToJson(g)));
  EXPECT_TRUE(Json::parse(text).is_object());
}

TEST(DeviceJsonTest, RawObjectsAreWrittenAsDumpWritesObjects) {
  EXPECT_EQ(RawObject({}), "{}");
  const Json j = {{"c", Json::object()}, {"a\"b", {1, 2}}, {"B", nullptr}};
  EXPECT_EQ(RawObject({{"c", "{}"}, {"a\"b", "[1,2]"}, {"B", "null"}}), Dump(j));
}

TEST(DeviceJsonTest, DeviceAffinitiesRoundTripInJobs) {
  model::Job job;
  job.id = "j";
  model::TaskGroup g;
  g.name = "g";
  model::Task t;
  t.name = "t";
  t.resources.devices = {{"nvidia/gpu", 2, {}, {{"${device.attr.memory}", "8 GiB", ">=", 75}}}};
  g.tasks = {t};
  job.task_groups = {g};
  const Json j = ToJson(job);
  const Json& a = j["TaskGroups"][0]["Tasks"][0]["Resources"]["Devices"][0]["Affinities"][0];
  EXPECT_EQ(
      a,
      Json::parse(
          R"({"LTarget":"${device.attr.memory}","RTarget":"8 GiB","Operand":">=","Weight":75})"));
  auto back = JobFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->task_groups[0].tasks[0].resources.devices, t.resources.devices);
}

}  // namespace
}  // namespace drover::codec
