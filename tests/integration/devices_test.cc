// End-to-end devices: an agent configured with the `example` device plugin exposing
// four fake GPUs runs a job whose two tasks each ask for one; each task sees its own
// GPU, the alloc stats show each task's own device and the alloc one group of both.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

std::string GpuFile(int i, bool healthy = true) {
  return "vendor = nvidia\ntype = gpu\nname = Fake T4\nattr.memory = 16 GiB\n"
         "healthy = " +
         std::string(healthy ? "true" : "false") +
         "\nstat.utilization = " + std::to_string(10 * (i + 1)) +
         " %\nstat.memory_used = " + std::to_string(100 * (i + 1)) +
         "/16384 MiB\nsummary = memory_used\n";
}

constexpr char kJob[] = R"(job "train" {
  datacenters = ["dc1"]
  group "g" {
    task "a" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo $NVIDIA_VISIBLE_DEVICES > $NOMAD_ALLOC_DIR/a.gpu; exec sleep 300"]
      }
      resources {
        cpu    = 50
        memory = 32
        device "nvidia/gpu" {
          count = 1
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "8 GiB"
          }
        }
      }
    }
    task "b" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo $NVIDIA_VISIBLE_DEVICES > $NOMAD_ALLOC_DIR/b.gpu; exec sleep 300"]
      }
      resources {
        cpu    = 50
        memory = 32
        device "gpu" {}
      }
    }
  }
}
)";

class DevicesTest : public ::testing::Test {
 protected:
  static std::vector<std::string> Setup(const fs::path& dir) {
    fs::create_directories(dir / "gpus");
    for (int i = 0; i < 4; ++i)
      std::ofstream(dir / "gpus" / ("GPU-" + std::to_string(i))) << GpuFile(i);
    std::ofstream(dir / "agent.hcl")
        << "plugin \"example\" {\n  config {\n    dir = \"" << (dir / "gpus").string()
        << "\"\n    env_var = \"NVIDIA_VISIBLE_DEVICES\"\n"
           "    fingerprint_period = \"1s\"\n  }\n}\n";
    return {"-config", (dir / "agent.hcl").string()};
  }
  DevicesTest() : agent_(Setup(files_.path())) {}
  void TearDown() override {
    if (HasFailure())
      std::cerr << "---- agent log ----\n" << agent_.log();
  }
  codec::Json Node() {
    codec::Json nodes = agent_.Get("/v1/nodes");
    return agent_.Get("/v1/node/" + nodes[0]["ID"].get<std::string>());
  }
  static std::set<std::string> Instances(const codec::Json& device_stats) {
    std::set<std::string> out;
    for (const codec::Json& g : device_stats) {
      for (auto it = g["InstanceStats"].begin(); it != g["InstanceStats"].end(); ++it)
        out.insert(it.key());
    }
    return out;
  }

  testing::TempDir files_;
  AgentProcess agent_;
};

TEST_F(DevicesTest, TwoTasksGetTheirOwnGpuAndTheirOwnStats) {
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  codec::Json node = Node();
  const codec::Json& devices = node["NodeResources"]["Devices"];
  ASSERT_EQ(devices.size(), 1u) << node.dump();
  EXPECT_EQ(devices[0]["Name"], "Fake T4");
  EXPECT_EQ(devices[0]["Instances"].size(), 4u);
  EXPECT_EQ(devices[0]["Attributes"]["memory"]["Int"], 16);
  EXPECT_EQ(devices[0]["Attributes"]["memory"]["Unit"], "GiB");
  const std::string computed_class = node["ComputedClass"];
  EXPECT_EQ(computed_class.rfind("v1:", 0), 0u);
  CliResult verbose = agent_.Cli({"node", "status", "-verbose", node["ID"]});
  EXPECT_NE(verbose.out.find("nvidia/gpu/Fake T4  GPU-2"), std::string::npos) << verbose.out;

  CliResult run = agent_.Cli({"job", "run", "-detach", agent_.WriteFile("train.nomad.hcl", kJob)});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::string alloc_id;
  ASSERT_TRUE(testing::WaitFor([&] {
    codec::Json allocs = agent_.Get("/v1/job/train/allocations");
    if (allocs.empty() || allocs[0]["ClientStatus"] != "running")
      return false;
    alloc_id = allocs[0]["ID"];
    return true;
  }));
  const fs::path alloc_dir = agent_.data_dir() / "alloc" / alloc_id / "alloc";
  std::string gpu_a, gpu_b;
  ASSERT_TRUE(testing::WaitFor([&] {
    gpu_a = testing::ReadFile(alloc_dir / "a.gpu");
    gpu_b = testing::ReadFile(alloc_dir / "b.gpu");
    return !gpu_a.empty() && !gpu_b.empty();
  }));
  gpu_a.pop_back();
  gpu_b.pop_back();
  EXPECT_NE(gpu_a, gpu_b);
  EXPECT_EQ(gpu_a.rfind("GPU-", 0), 0u);
  EXPECT_EQ(gpu_b.rfind("GPU-", 0), 0u);
  codec::Json alloc = agent_.Get("/v1/allocation/" + alloc_id);
  EXPECT_EQ(alloc["AllocatedResources"]["Tasks"]["a"]["Devices"][0]["DeviceIDs"][0], gpu_a);

  // Each task sees only its instance; the alloc one group with both.
  codec::Json stats;
  ASSERT_TRUE(testing::WaitFor([&] {
    stats = agent_.Get("/v1/client/allocation/" + alloc_id + "/stats");
    return stats["Tasks"].contains("a") && stats["Tasks"].contains("b") &&
           !stats["Tasks"]["a"]["ResourceUsage"]["DeviceStats"].empty() &&
           !stats["Tasks"]["b"]["ResourceUsage"]["DeviceStats"].empty();
  })) << stats.dump();
  EXPECT_EQ(Instances(stats["Tasks"]["a"]["ResourceUsage"]["DeviceStats"]),
            std::set<std::string>{gpu_a});
  EXPECT_EQ(Instances(stats["Tasks"]["b"]["ResourceUsage"]["DeviceStats"]),
            std::set<std::string>{gpu_b});
  const codec::Json& merged = stats["ResourceUsage"]["DeviceStats"];
  ASSERT_EQ(merged.size(), 1u) << merged.dump();
  EXPECT_EQ(Instances(merged), (std::set<std::string>{gpu_a, gpu_b}));
  const int n = gpu_a.back() - '0';
  EXPECT_EQ(merged[0]["InstanceStats"][gpu_a]["Summary"]["IntNumeratorVal"], 100 * (n + 1));
  EXPECT_EQ(Instances(agent_.Get("/v1/client/stats")["DeviceStats"]).size(), 4u);
  CliResult status = agent_.Cli({"alloc", "status", "-stats", alloc_id});
  EXPECT_NE(status.out.find("Device Stats"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("nvidia/gpu/Fake T4[" + gpu_a + "]"), std::string::npos) << status.out;

  // A GPU turning unhealthy shows on the node; the class stays.
  // Written aside and renamed into place, as docs/devices.md advises: the plugin never
  // reads a half-written file.
  std::ofstream(files_.path() / "gpus" / ".tmp") << GpuFile(n, /*healthy=*/false);
  fs::rename(files_.path() / "gpus" / ".tmp", files_.path() / "gpus" / gpu_a);
  ASSERT_TRUE(testing::WaitFor([&] {
    const codec::Json now = Node();
    for (const codec::Json& i : now["NodeResources"]["Devices"][0]["Instances"]) {
      if (i["ID"] == gpu_a)
        return i["Healthy"] == false;
    }
    return false;
  })) << Node()["NodeResources"]["Devices"].dump()
      << "\n"
      << agent_.Get("/v1/client/stats")["DeviceStats"].dump();
  EXPECT_EQ(Node()["ComputedClass"], computed_class);

  // Two more GPUs are free, but a job asking for three cannot be placed, and says why.
  std::string big = kJob;
  big.replace(big.find("job \"train\""), 11, "job \"big\"");
  big.replace(big.find("count = 1"), 9, "count = 3");
  CliResult refused = agent_.Cli({"job", "run", "-detach", agent_.WriteFile("big.nomad.hcl", big)});
  ASSERT_EQ(refused.exit_code, 0) << refused.err;
  CliResult job_status;
  ASSERT_TRUE(testing::WaitFor([&] {
    job_status = agent_.Cli({"job", "status", "big"});
    return job_status.out.find("Placement Failure") != std::string::npos;
  })) << job_status.out;
  EXPECT_NE(job_status.out.find("devices: not enough healthy, unallocated \\\"nvidia/gpu\\\""),
            std::string::npos)
      << job_status.out;
}

}  // namespace
}  // namespace drover::integration
