// Deployments end to end, through the `drover` CLI against a real agent, with the
// canary example (examples/canary.nomad.hcl): the first version rolls out and turns
// stable; a second one places a canary that waits for promotion, then rolls out one
// allocation at a time; a version whose task exits at once fails its deployment and
// is rolled back; promotion without canaries is refused.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string Example() {
  std::ifstream in(std::string(DROVER_SOURCE_DIR) + "/examples/canary.nomad.hcl");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Allocations meant to run, by job version.
std::map<uint64_t, int> LiveByVersion(AgentProcess& agent) {
  std::map<uint64_t, int> out;
  for (const auto& a : agent.Get("/v1/job/canary/allocations")) {
    if (a["DesiredStatus"] == "run" && a["ClientStatus"] != "complete" &&
        a["ClientStatus"] != "failed")
      ++out[a["JobVersion"].get<uint64_t>()];
  }
  return out;
}

codec::Json Latest(AgentProcess& agent) {
  return agent.Get("/v1/job/canary/deployment");
}

TEST_F(AgentTest, CanaryThenOneAtATimeThenAutoRevertThroughTheCli) {
  const std::string file = agent_.WriteFile("canary.nomad.hcl", Example());
  // The first version: `job run` follows its deployment until it succeeds.
  CliResult run = agent_.Cli({"job", "run", file});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(Contains(run.out, "Monitoring deployment")) << run.out;
  EXPECT_TRUE(Contains(run.out, "Deployment completed successfully")) << run.out;
  EXPECT_TRUE(agent_.Get("/v1/job/canary")["Stable"].get<bool>());

  // The second: one canary beside the three, and nothing else until promotion.
  run = agent_.Cli({"job", "run", "-detach", "-var", "version=2", file});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const codec::Json d = Latest(agent_);
        return d.is_object() && d["JobVersion"] == 1 &&
               d["TaskGroups"]["web"]["HealthyAllocs"] == 1;
      },
      60s));
  EXPECT_EQ(LiveByVersion(agent_), (std::map<uint64_t, int>{{0, 3}, {1, 1}}));
  const std::string id = Latest(agent_)["ID"];
  CliResult status = agent_.Cli({"deployment", "status", id.substr(0, 8)});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(Contains(status.out, "Deployment is running but requires manual promotion"))
      << status.out;
  EXPECT_TRUE(Contains(status.out, "Task Group  Auto Revert  Promoted  Desired  Canaries"))
      << status.out;

  // Promoted: the old allocation beside the canary stops and one more is replaced; the
  // last one only once that replacement ran min_healthy_time (3 s): one at a time.
  // `deployment promote` follows the rollout to its end.
  CliResult promote = agent_.Cli({"deployment", "promote", id});
  EXPECT_EQ(promote.exit_code, 0) << promote.out << promote.err;
  ASSERT_TRUE(testing::WaitFor([&] { return Latest(agent_)["Status"] == "successful"; }, 60s));
  EXPECT_EQ(LiveByVersion(agent_), (std::map<uint64_t, int>{{1, 3}}));
  std::vector<int64_t> created;  // of the new version's allocations
  for (const auto& a : agent_.Get("/v1/job/canary/allocations")) {
    if (a["JobVersion"] == 1 && a["DesiredStatus"] == "run")
      created.push_back(a["CreateTime"].get<int64_t>());
  }
  std::sort(created.begin(), created.end());
  ASSERT_EQ(created.size(), 3u);  // the canary, then two replacements
  EXPECT_GE(created[2] - created[1], 2'500'000'000)
      << "the last replacement came before the previous one was healthy";

  // A version whose task exits at once: unhealthy, failed, rolled back to version 1.
  std::string broken = Example();
  broken.replace(broken.find("exec sleep 3600"), 15, "exit 3");
  const std::string bad = agent_.WriteFile("broken.nomad.hcl", broken);
  run = agent_.Cli({"job", "run", bad});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_TRUE(Contains(run.out, "rolling back to job version 1")) << run.out;
  ASSERT_TRUE(testing::WaitFor([&] { return agent_.Get("/v1/job/canary")["Version"] == 3; }, 60s));
  CliResult history = agent_.Cli({"job", "history", "canary"});
  EXPECT_TRUE(Contains(history.out, "Version     = 3")) << history.out;

  // Promoting a deployment without canaries is Nomad's error.
  ASSERT_TRUE(testing::WaitFor([&] { return Latest(agent_)["JobVersion"] == 3; }, 60s));
  const std::string latest = Latest(agent_)["ID"];
  if (Latest(agent_)["Status"] == "running") {
    promote = agent_.Cli({"deployment", "promote", latest});
    EXPECT_EQ(promote.exit_code, 1);
    EXPECT_TRUE(Contains(promote.err, "no canaries to promote")) << promote.err;
  }
}

}  // namespace
}  // namespace drover::integration
