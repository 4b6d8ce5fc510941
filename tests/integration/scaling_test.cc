// Scaling through the CLI and the API against a real agent: a job file's scaling block,
// `drover job scale`, the group's status with its events, and the policy endpoints.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

constexpr char kScalable[] = R"(job "sc" {
  datacenters = ["dc1"]
  group "front" {
    count = 2
    scaling {
      min = 1
      max = 4
      policy {
        cooldown = "1m"
      }
    }
    task "server" {
      driver = "raw_exec"
      kill_timeout = "1s"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
)";

int Running(AgentProcess& agent) {
  int n = 0;
  for (const auto& a : agent.Get("/v1/job/sc/allocations"))
    n += a["DesiredStatus"] == "run" && a["ClientStatus"] == "running";
  return n;
}

TEST_F(AgentTest, JobScaleChangesTheCountAndRecordsEvents) {
  ASSERT_EQ(agent_.Cli({"job", "run", agent_.WriteFile("sc.nomad.hcl", kScalable)}).exit_code, 0);
  ASSERT_TRUE(testing::WaitFor([&] { return Running(agent_) == 2; }, 30s));

  CliResult up = agent_.Cli({"job", "scale", "sc", "front", "4"});
  EXPECT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_TRUE(testing::WaitFor([&] { return Running(agent_) == 4; }, 30s));
  // The group may be left out: the job has one.
  CliResult down = agent_.Cli({"job", "scale", "sc", "1"});
  EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  EXPECT_TRUE(testing::WaitFor([&] { return Running(agent_) == 1; }, 30s));
  CliResult beyond = agent_.Cli({"job", "scale", "sc", "front", "9"});
  EXPECT_EQ(beyond.exit_code, 1);
  EXPECT_NE(beyond.err.find("group count was greater than scaling policy maximum: 9 > 4"),
            std::string::npos)
      << beyond.err;

  codec::Json status = agent_.Get("/v1/job/sc/scale");
  const codec::Json& front = status["TaskGroups"]["front"];
  EXPECT_EQ(front["Desired"], 1);
  ASSERT_EQ(front["Events"].size(), 2u) << status.dump();
  EXPECT_EQ(front["Events"][0]["Count"], 1);
  EXPECT_EQ(front["Events"][0]["PreviousCount"], 4);
  EXPECT_EQ(front["Events"][1]["Count"], 4);
  EXPECT_EQ(front["Events"][1]["Message"], "submitted using the Drover CLI");

  codec::Json policies = agent_.Get("/v1/scaling/policies");
  ASSERT_EQ(policies.size(), 1u);
  EXPECT_EQ(policies[0]["Target"]["Group"], "front");
  codec::Json policy = agent_.Get("/v1/scaling/policy/" + policies[0]["ID"].get<std::string>());
  EXPECT_EQ(policy["Max"], 4);
  EXPECT_EQ(policy["Policy"]["cooldown"], "1m");
  EXPECT_EQ(agent_.Get("/v1/job/sc")["TaskGroups"][0]["Scaling"]["ID"], policies[0]["ID"]);
}

}  // namespace
}  // namespace drover::integration
