// Resource usage through the API and the CLI: a running raw_exec task and the node.
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

class StatsTest : public AgentTest {};

TEST_F(StatsTest, TaskAndHostUsageThroughTheApiAndTheCli) {
  const std::string file =
      agent_.WriteFile("s.json", RawExecJob("stats", "service", "sleep 300 & wait"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const codec::Json alloc = WaitAlloc("stats", "running");
  const std::string id = alloc["ID"];
  codec::Json stats;
  // The first sample may predate the shell's fork: wait for one that shows the shell
  // and its sleep, each on its own.
  ASSERT_TRUE(testing::WaitFor([&] {
    stats = agent_.Get("/v1/client/allocation/" + id + "/stats");
    return stats["Tasks"].contains("t") && stats["Tasks"]["t"]["Pids"].size() == 2;
  })) << stats.dump();
  const codec::Json& task = stats["Tasks"]["t"];
  EXPECT_GT(task["ResourceUsage"]["MemoryStats"]["RSS"].get<uint64_t>(), 0u) << task.dump();
  EXPECT_EQ(task["ResourceUsage"]["MemoryStats"]["Measured"], codec::Json({"RSS"}));
  EXPECT_TRUE(task["ResourceUsage"]["CpuStats"].contains("TotalTicks"));
  EXPECT_GT(task["Timestamp"].get<int64_t>(), 0);
  EXPECT_EQ(stats["ResourceUsage"]["MemoryStats"]["RSS"],
            task["ResourceUsage"]["MemoryStats"]["RSS"]);
  // No devices: empty arrays, as Nomad sends them.
  EXPECT_EQ(task["ResourceUsage"]["DeviceStats"], codec::Json::array());
  EXPECT_EQ(stats["ResourceUsage"]["DeviceStats"], codec::Json::array());
  // The body is assembled from encoded pieces; ?pretty indents the same document.
  auto pretty = agent_.http().Do("GET", "/v1/client/allocation/" + id + "/stats?pretty");
  ASSERT_TRUE(pretty.ok()) << pretty.status();
  EXPECT_NE(pretty->body.find("\n    \"ResourceUsage\": {"), std::string::npos) << pretty->body;
  EXPECT_TRUE(codec::Json::parse(pretty->body)["Tasks"].contains("t"));

  const codec::Json host = agent_.Get("/v1/client/stats");
  EXPECT_GT(host["Memory"]["Total"].get<uint64_t>(), 0u);
  EXPECT_EQ(host["CPU"].size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_EQ(host["CPU"][0]["CPU"], "cpu0");
  EXPECT_GT(host["Uptime"].get<uint64_t>(), 0u);
  EXPECT_GT(host["AllocDirStats"]["Size"].get<uint64_t>(), 0u);
  EXPECT_TRUE(host.contains("CPUTicksConsumed"));
  EXPECT_EQ(host["DeviceStats"], codec::Json::array());
  auto wrong = agent_.http().Do("GET", "/v1/client/stats?node_id=nope");
  EXPECT_NE(wrong.status().message().find("404"), std::string::npos) << wrong.status();
  auto unknown =
      agent_.http().Do("GET", "/v1/client/allocation/ffffffff-0000-4000-8000-000000000000/stats");
  EXPECT_NE(unknown.status().message().find("404"), std::string::npos) << unknown.status();

  CliResult a = agent_.Cli({"alloc", "status", "-stats", id});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("Memory Stats"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("CPU Stats"), std::string::npos) << a.out;
  const std::string node = alloc["NodeID"];
  CliResult n = agent_.Cli({"node", "status", "-stats", node});
  EXPECT_EQ(n.exit_code, 0) << n.err;
  for (const char* want : {"Host Resource Utilization", "CPU Stats", "Memory Stats", "cpu0"})
    EXPECT_NE(n.out.find(want), std::string::npos) << want << " missing from:\n" << n.out;
}

}  // namespace
}  // namespace drover::integration
