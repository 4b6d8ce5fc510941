// Deployments end to end, through the `drover` CLI against a real agent, with the
// canary example (examples/canary.nomad.hcl): the first version rolls out and turns
// stable; a second one places a canary that waits for promotion, then rolls out one
// allocation at a time; a version whose task exits at once fails its deployment and
// is rolled back. Manual health, promotion without canaries and a progress deadline
// with a second job.
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

  // The second: its plan shows the canary; one is placed beside the three, and nothing
  // else until promotion.
  CliResult plan = agent_.Cli({"job", "plan", "-var", "version=2", file});
  EXPECT_EQ(plan.exit_code, 1) << plan.out << plan.err;
  EXPECT_TRUE(Contains(plan.out, "+/- Task Group: \"web\" (1 canary, 3 ignore)")) << plan.out;
  EXPECT_TRUE(Contains(plan.out, "+/- Env[VERSION]: \"1\" => \"2\"")) << plan.out;
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

  // A version whose task exits at once, without a progress deadline (so the first
  // unhealthy allocation fails the deployment, rather than the deadline): failed, rolled
  // back to version 1.
  std::string broken = Example();
  broken.replace(broken.find("exec sleep 3600"), 15, "exit 3");
  broken.replace(broken.find("progress_deadline = \"5m\""), 24, "progress_deadline = \"0\"");
  const std::string bad = agent_.WriteFile("broken.nomad.hcl", broken);
  run = agent_.Cli({"job", "run", bad});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_TRUE(Contains(run.out, "rolling back to job version 1")) << run.out;
  ASSERT_TRUE(testing::WaitFor([&] { return agent_.Get("/v1/job/canary")["Version"] == 3; }, 60s));
  // The failed canary and the rollback show in the history and the job's status.
  CliResult history = agent_.Cli({"job", "history", "canary"});
  EXPECT_TRUE(Contains(history.out, "Version     = 3")) << history.out;
  EXPECT_TRUE(Contains(history.out, "Version     = 2\nStable      = false")) << history.out;
  status = agent_.Cli({"job", "status", "canary"});
  EXPECT_TRUE(Contains(status.out, "\nLatest Deployment\n")) << status.out;
  bool failed_canary_listed = false;  // an allocation line: ... web  2  <desired>  failed
  std::istringstream lines(status.out);
  for (std::string line; std::getline(lines, line);)
    failed_canary_listed = failed_canary_listed ||
                           (Contains(line, " web         2        ") && Contains(line, " failed "));
  EXPECT_TRUE(failed_canary_listed) << status.out;
}

// A deployment judged by hand (health_check = "manual"): promotion without canaries is
// refused, allocation-health completes it. The next version gets no verdict, so its
// progress deadline passes and it rolls back.
TEST_F(AgentTest, ManualHealthThenAPassedProgressDeadlineThroughTheCli) {
  auto job = [](const std::string& version, const std::string& deadlines) {
    return "job \"manual\" {\n"
           "  update {\n"
           "    health_check = \"manual\"\n"
           "    auto_revert  = true\n" +
           deadlines +
           "  }\n"
           "  group \"web\" {\n"
           "    task \"server\" {\n"
           "      driver = \"raw_exec\"\n"
           "      kill_timeout = \"1s\"\n"
           "      config {\n"
           "        command = \"/bin/sleep\"\n"
           "        args    = [\"" +
           version +
           "\"]\n"
           "      }\n"
           "      resources {\n"
           "        cpu    = 20\n"
           "        memory = 16\n"
           "      }\n"
           "    }\n"
           "  }\n"
           "}\n";
  };
  const std::string v0 = agent_.WriteFile("v0.nomad.hcl", job("3600", ""));
  CliResult run = agent_.Cli({"job", "run", "-detach", v0});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const codec::Json d = agent_.Get("/v1/job/manual/deployment");
        return d.is_object() && d["TaskGroups"]["web"]["PlacedAllocs"] == 1;
      },
      30s));
  const std::string id = agent_.Get("/v1/job/manual/deployment")["ID"];
  CliResult promote = agent_.Cli({"deployment", "promote", id});
  EXPECT_EQ(promote.exit_code, 1);
  EXPECT_TRUE(Contains(promote.err, "no canaries to promote")) << promote.err;
  EXPECT_EQ(agent_.Get("/v1/job/manual/deployment")["Status"], "running");

  const std::string alloc = agent_.Get("/v1/job/manual/allocations")[0]["ID"];
  codec::Json health = {{"DeploymentID", id}, {"HealthyAllocationIDs", {alloc}}};
  auto healthy = agent_.http().Do("PUT", "/v1/deployment/allocation-health/" + id, health.dump());
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_EQ(healthy->status, 200) << healthy->body;
  ASSERT_TRUE(testing::WaitFor(
      [&] { return agent_.Get("/v1/job/manual/deployment")["Status"] == "successful"; }, 30s));

  const std::string v1 = agent_.WriteFile("v1.nomad.hcl", job("3601",
                                                              "    min_healthy_time  = \"1s\"\n"
                                                              "    healthy_deadline  = \"2s\"\n"
                                                              "    progress_deadline = \"3s\"\n"));
  // Detached: `job run` would follow the rollback's deployment, which waits for a
  // verdict by hand too.
  run = agent_.Cli({"job", "run", "-detach", v1});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(testing::WaitFor([&] { return agent_.Get("/v1/job/manual")["Version"] == 2; }, 30s));
  codec::Json failed;
  for (const codec::Json& d : agent_.Get("/v1/job/manual/deployments")) {
    if (d["JobVersion"] == 1)
      failed = d;
  }
  ASSERT_TRUE(failed.is_object());
  CliResult status = agent_.Cli({"deployment", "status", failed["ID"].get<std::string>()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(Contains(status.out, "Status      = failed")) << status.out;
  EXPECT_TRUE(Contains(status.out,
                       "Description = Failed due to progress deadline - rolling back to job "
                       "version 0"))
      << status.out;
  EXPECT_FALSE(agent_.Get("/v1/job/manual/versions")["Versions"][1]["Stable"].get<bool>());
}

}  // namespace
}  // namespace drover::integration
