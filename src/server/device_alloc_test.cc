#include "server/device_alloc.h"

#include <gtest/gtest.h>

#include "server/scheduler.h"
#include "server/test_fixtures.h"

namespace drover::server {
namespace {

model::NodeDeviceResource Gpus(const std::string& name, int n, int64_t memory_gib,
                               const std::string& prefix) {
  model::NodeDeviceResource g{.vendor = "nvidia", .type = "gpu", .name = name};
  g.attributes["memory"] = model::Attribute::Int(memory_gib, "GiB");
  g.attributes["cuda_cores"] = model::Attribute::Int(2560);
  for (int i = 0; i < n; ++i)
    g.instances.push_back({.id = prefix + std::to_string(i), .healthy = true});
  return g;
}

model::Node GpuNode(const std::string& id, std::vector<model::NodeDeviceResource> devices) {
  model::Node n = test::MakeNode(id);
  n.node_resources.devices = std::move(devices);
  return n;
}

model::Job GpuJob(std::vector<model::RequestedDevice> per_task, int tasks = 1, int count = 1) {
  model::Job job = test::MakeJob("train", count, "batch");
  model::Task proto = job.task_groups[0].tasks[0];
  job.task_groups[0].tasks.clear();
  for (int i = 0; i < tasks; ++i) {
    model::Task t = proto;
    t.name = "t" + std::to_string(i);
    t.resources.devices = per_task;
    job.task_groups[0].tasks.push_back(t);
  }
  return job;
}

PlanResult Schedule(const model::Job& job, const std::vector<model::Node>& nodes,
                    const std::vector<model::Allocation>& existing = {}) {
  SchedulerInput in;
  in.eval.id = "e";
  in.job = std::make_shared<const model::Job>(job);
  for (const auto& n : nodes)
    in.nodes.push_back(std::make_shared<const model::Node>(n));
  for (const auto& a : existing)
    in.node_allocs.push_back(std::make_shared<const model::Allocation>(a));
  in.seed = 1;
  return server::Schedule(in);
}

TEST(DeviceConstraintTest, ResolvesDeviceTargetsAndComparesWithUnits) {
  const model::NodeDeviceResource g = Gpus("Tesla T4", 1, 16, "GPU-");
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.memory}", "4 GiB", ">="}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.memory}", "16384 MiB", "="}, g));
  EXPECT_FALSE(MeetsDeviceConstraint({"${device.attr.memory}", "32 GiB", ">="}, g));
  EXPECT_FALSE(MeetsDeviceConstraint({"${device.attr.memory}", "4 W", ">="}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.model}", "Tesla T4", "="}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.model}", "^Tesla", "regexp"}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.vendor}", "amd", "!="}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.cuda_cores}", "2000", ">"}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.memory}", "", "is_set"}, g));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.ecc}", "", "is_not_set"}, g));
  EXPECT_FALSE(MeetsDeviceConstraint({"${device.attr.ecc}", "true", "="}, g));
  model::NodeDeviceResource v = g;
  v.attributes["driver_version"] = model::Attribute::String("535.10");
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.driver_version}", ">= 535.9", "version"}, v));
  EXPECT_TRUE(MeetsDeviceConstraint({"${device.attr.driver_version}", "^535\\.10$", "regexp"}, v));
}

TEST(DeviceSchedulingTest, AssignsCountInstancesPerTaskWithoutDoubleAllocation) {
  const auto node = GpuNode("n1", {Gpus("T4", 4, 16, "GPU-")});
  auto plan = Schedule(GpuJob({{"nvidia/gpu", 2, {}, {}}}, 2), {node});
  ASSERT_EQ(plan.placed, 1);
  const auto& tasks = plan.upserts[0].allocated_resources.tasks;
  ASSERT_EQ(tasks.at("t0").devices.size(), 1u);
  EXPECT_EQ(tasks.at("t0").devices[0].device_ids, (std::vector<std::string>{"GPU-0", "GPU-1"}));
  EXPECT_EQ(tasks.at("t1").devices[0].device_ids, (std::vector<std::string>{"GPU-2", "GPU-3"}));
  EXPECT_EQ(tasks.at("t1").devices[0].name, "T4");

  // The node is now full: another allocation cannot get any of them.
  auto second = Schedule(GpuJob({{"gpu", 1, {}, {}}}), {node}, plan.upserts);
  EXPECT_EQ(second.placed, 0);
  const model::AllocMetric& m = second.failed_tg_allocs.at("web");
  EXPECT_EQ(m.nodes_exhausted, 1);
  EXPECT_EQ(m.dimension_exhausted.at(
                "devices: not enough healthy, unallocated \"gpu\" instances (1 requested)"),
            1);
}

TEST(DeviceSchedulingTest, MatchesNamesAtAllThreeLevels) {
  const auto node = GpuNode("n1", {Gpus("Tesla T4", 1, 16, "GPU-")});
  for (const std::string name : {"gpu", "nvidia/gpu", "nvidia/gpu/Tesla T4"})
    EXPECT_EQ(Schedule(GpuJob({{name, 1, {}, {}}}), {node}).placed, 1) << name;
  for (const std::string name : {"fpga", "amd/gpu", "nvidia/gpu/A100"}) {
    auto plan = Schedule(GpuJob({{name, 1, {}, {}}}), {node});
    EXPECT_EQ(plan.placed, 0) << name;
    EXPECT_EQ(plan.failed_tg_allocs.at("web").constraint_filtered.at("missing devices"), 1);
  }
}

TEST(DeviceSchedulingTest, ConstraintsFilterGroupsAndSayWhich) {
  const auto node = GpuNode("n1", {Gpus("T4", 1, 16, "small-"), Gpus("A100", 1, 80, "big-")});
  auto plan = Schedule(GpuJob({{"nvidia/gpu", 1, {{"${device.attr.memory}", "40 GiB", ">="}}, {}}}),
                       {node});
  ASSERT_EQ(plan.placed, 1);
  EXPECT_EQ(plan.upserts[0].allocated_resources.tasks.at("t0").devices[0].device_ids[0], "big-0");

  plan = Schedule(GpuJob({{"gpu", 1, {{"${device.attr.memory}", "100 GiB", ">="}}, {}}}), {node});
  EXPECT_EQ(plan.placed, 0);
  EXPECT_EQ(
      plan.failed_tg_allocs.at("web").constraint_filtered.at("${device.attr.memory} >= 100 GiB"),
      1);
}

TEST(DeviceSchedulingTest, OnlyHealthyInstancesAreUsed) {
  auto group = Gpus("T4", 2, 16, "GPU-");
  group.instances[0].healthy = false;
  const auto node = GpuNode("n1", {group});
  auto plan = Schedule(GpuJob({{"gpu", 1, {}, {}}}), {node});
  ASSERT_EQ(plan.placed, 1);
  EXPECT_EQ(plan.upserts[0].allocated_resources.tasks.at("t0").devices[0].device_ids[0], "GPU-1");
  EXPECT_EQ(Schedule(GpuJob({{"gpu", 2, {}, {}}}), {node}).placed, 0);
}

TEST(DeviceSchedulingTest, AffinitiesPreferGroupsAndNodes) {
  // Within a node: the affinity picks the larger GPUs although the smaller come first.
  const auto mixed = GpuNode("n1", {Gpus("T4", 1, 16, "small-"), Gpus("A100", 1, 80, "big-")});
  const model::RequestedDevice want_big{
      "gpu", 1, {}, {{"${device.attr.memory}", "40 GiB", ">=", 100}}};
  auto plan = Schedule(GpuJob({want_big}), {mixed});
  ASSERT_EQ(plan.placed, 1);
  EXPECT_EQ(plan.upserts[0].allocated_resources.tasks.at("t0").devices[0].device_ids[0], "big-0");
  // A negative weight steers away.
  const model::RequestedDevice avoid_big{
      "gpu", 1, {}, {{"${device.attr.memory}", "40 GiB", ">=", -100}}};
  plan = Schedule(GpuJob({avoid_big}), {mixed});
  EXPECT_EQ(plan.upserts[0].allocated_resources.tasks.at("t0").devices[0].device_ids[0], "small-0");
  // Across nodes: the node whose GPUs match wins over an otherwise identical one.
  const auto small = GpuNode("a-small", {Gpus("T4", 1, 16, "s-")});
  const auto big = GpuNode("b-big", {Gpus("A100", 1, 80, "b-")});
  for (const auto& order : {std::vector{small, big}, std::vector{big, small}}) {
    plan = Schedule(GpuJob({want_big}), order);
    ASSERT_EQ(plan.placed, 1);
    EXPECT_EQ(plan.upserts[0].node_id, "b-big");
  }
}

}  // namespace
}  // namespace drover::server
