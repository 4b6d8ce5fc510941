// Job versions end to end, through the `drover` CLI against a real agent: plan (an
// in-place count change, a destructive config change), run -check-index, history and
// revert, and the API's refusals.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

std::string WebJob(int count, const std::string& seconds) {
  return "job \"web\" {\n"
         "  datacenters = [\"dc1\"]\n"
         "  group \"front\" {\n"
         "    count = " +
         std::to_string(count) +
         "\n"
         "    task \"server\" {\n"
         "      driver = \"raw_exec\"\n"
         "      kill_timeout = \"1s\"\n"
         "      config {\n"
         "        command = \"/bin/sleep\"\n"
         "        args    = [\"" +
         seconds +
         "\"]\n"
         "      }\n"
         "      resources {\n"
         "        cpu    = 20\n"
         "        memory = 16\n"
         "      }\n"
         "    }\n"
         "  }\n"
         "}\n";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Running allocations of the job, by the job version each runs.
std::map<uint64_t, int> RunningByVersion(AgentProcess& agent) {
  std::map<uint64_t, int> out;
  for (const auto& a : agent.Get("/v1/job/web/allocations")) {
    if (a["DesiredStatus"] == "run" && a["ClientStatus"] == "running")
      ++out[a["JobVersion"].get<uint64_t>()];
  }
  return out;
}

TEST_F(AgentTest, PlanRunCheckIndexHistoryAndRevertThroughTheCli) {
  const std::string v0 = agent_.WriteFile("web0.nomad.hcl", WebJob(1, "600"));
  CliResult plan = agent_.Cli({"job", "plan", v0});
  EXPECT_EQ(plan.exit_code, 1) << plan.out << plan.err;  // something would be created
  EXPECT_TRUE(Contains(plan.out, "+ Job: \"web\"")) << plan.out;
  EXPECT_TRUE(Contains(plan.out, "drover job run -check-index 0 ")) << plan.out;
  ASSERT_EQ(agent_.Cli({"job", "run", "-check-index", "0", v0}).exit_code, 0);
  ASSERT_TRUE(testing::WaitFor([&] { return RunningByVersion(agent_)[0] == 1; }, 30s));
  const uint64_t index0 = agent_.Get("/v1/job/web")["JobModifyIndex"];

  // A count change: the running allocation is updated in place, two are created.
  const std::string v1 = agent_.WriteFile("web1.nomad.hcl", WebJob(3, "600"));
  plan = agent_.Cli({"job", "plan", v1});
  EXPECT_EQ(plan.exit_code, 1) << plan.out << plan.err;
  EXPECT_TRUE(Contains(plan.out, "+/- Task Group: \"front\" (2 create, 1 in-place update)"))
      << plan.out;
  EXPECT_TRUE(Contains(plan.out, "+/- Count: \"1\" => \"3\" (forces create)")) << plan.out;
  EXPECT_TRUE(Contains(plan.out, "- All tasks successfully allocated.")) << plan.out;
  EXPECT_TRUE(Contains(plan.out, "Job Modify Index: " + std::to_string(index0))) << plan.out;
  EXPECT_EQ(agent_.Get("/v1/job/web")["Version"], 0) << "a plan changes nothing";
  ASSERT_EQ(agent_.Cli({"job", "run", "-check-index", std::to_string(index0), v1}).exit_code, 0);
  ASSERT_TRUE(testing::WaitFor([&] { return RunningByVersion(agent_)[1] == 3; }, 30s));

  // A config change replaces every allocation; a stale -check-index changes nothing.
  const std::string v2 = agent_.WriteFile("web2.nomad.hcl", WebJob(3, "700"));
  plan = agent_.Cli({"job", "plan", v2});
  EXPECT_TRUE(Contains(plan.out, "(3 create/destroy update)")) << plan.out;
  EXPECT_TRUE(Contains(plan.out, "+/- Task: \"server\" (forces create/destroy update)"))
      << plan.out;
  EXPECT_TRUE(Contains(plan.out, "+/- args[0]: \"600\" => \"700\"")) << plan.out;
  CliResult stale = agent_.Cli({"job", "run", "-check-index", std::to_string(index0), v2});
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_TRUE(Contains(stale.err, "Enforcing job modify index " + std::to_string(index0)))
      << stale.err;
  EXPECT_TRUE(Contains(stale.err, "Job not updated")) << stale.err;
  EXPECT_EQ(agent_.Get("/v1/job/web")["Version"], 1);
  ASSERT_EQ(agent_.Cli({"job", "run", v2}).exit_code, 0);
  ASSERT_TRUE(testing::WaitFor([&] { return RunningByVersion(agent_)[2] == 3; }, 30s));

  CliResult history = agent_.Cli({"job", "history", "-p", "web"});
  EXPECT_EQ(history.exit_code, 0) << history.err;
  EXPECT_TRUE(Contains(history.out, "Version     = 2")) << history.out;
  EXPECT_TRUE(Contains(history.out, "+/- args[0]: \"600\" => \"700\"")) << history.out;
  EXPECT_TRUE(Contains(history.out, "+/- Count: \"1\" => \"3\"")) << history.out;

  // Back to version 0: a new version 3 with its spec, one allocation of it.
  CliResult revert = agent_.Cli({"job", "revert", "web", "0"});
  EXPECT_EQ(revert.exit_code, 0) << revert.out << revert.err;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return RunningByVersion(agent_) == std::map<uint64_t, int>{{3, 1}};
      },
      30s))
      << agent_.Get("/v1/job/web/allocations").dump();
  codec::Json job = agent_.Get("/v1/job/web");
  EXPECT_EQ(job["Version"], 3);
  EXPECT_EQ(job["TaskGroups"][0]["Count"], 1);
  EXPECT_EQ(job["TaskGroups"][0]["Tasks"][0]["Config"]["args"][0], "600");

  CliResult current = agent_.Cli({"job", "revert", "web", "3"});
  EXPECT_EQ(current.exit_code, 1);
  EXPECT_TRUE(Contains(current.err, "can't revert to current version")) << current.err;
  CliResult missing = agent_.Cli({"job", "revert", "web", "42"});
  EXPECT_TRUE(Contains(missing.err, "at version 42 not found")) << missing.err;
  EXPECT_EQ(agent_.Get("/v1/job/web")["Version"], 3);
}

TEST_F(AgentTest, VersionsAndStabilityAnswerAsNomadsApi) {
  ASSERT_EQ(agent_.Cli({"job", "run", agent_.WriteFile("w.hcl", WebJob(1, "600"))}).exit_code, 0);
  ASSERT_EQ(agent_.Cli({"job", "run", agent_.WriteFile("w2.hcl", WebJob(2, "600"))}).exit_code, 0);
  codec::Json versions = agent_.Get("/v1/job/web/versions?diffs=true");
  ASSERT_EQ(versions["Versions"].size(), 2u) << versions.dump();
  EXPECT_EQ(versions["Versions"][0]["Version"], 1);
  ASSERT_EQ(versions["Diffs"].size(), 1u);
  EXPECT_EQ(versions["Diffs"][0]["TaskGroups"][0]["Fields"][0]["Name"], "Count");

  auto stable = agent_.http().Do("PUT", "/v1/job/web/stable",
                                 R"({"JobID":"web","JobVersion":0,"Stable":true})");
  ASSERT_TRUE(stable.ok()) << stable.status();
  EXPECT_TRUE(agent_.Get("/v1/job/web/versions")["Versions"][1]["Stable"].get<bool>());
  auto mismatch = agent_.http().Do("PUT", "/v1/job/web/stable", R"({"JobID":"db"})");
  EXPECT_TRUE(Contains(std::string(mismatch.status().message()), "400 (Job ID does not match)"))
      << mismatch.status();
  auto none = agent_.http().Do("GET", "/v1/job/nope/versions");
  EXPECT_TRUE(Contains(std::string(none.status().message()), "404 (job versions not found)"))
      << none.status();
  auto enforce = agent_.http().Do("PUT", "/v1/job/web/revert",
                                  R"({"JobID":"web","JobVersion":0,"EnforcePriorVersion":0})");
  EXPECT_TRUE(Contains(std::string(enforce.status().message()),
                       "Current job has version 1; enforcing "
                       "version 0"))
      << enforce.status();
  auto bad_plan = agent_.http().Do("PUT", "/v1/job/web/plan", R"({"Job":{"ID":"other"}})");
  EXPECT_TRUE(
      Contains(std::string(bad_plan.status().message()), "400 (Job ID does not match name)"))
      << bad_plan.status();
  // A plan for a job that does not parse: a 400 from the API, exit 255 from the CLI
  // (Nomad's plan error code), and nothing changed.
  auto garbled = agent_.http().Do("PUT", "/v1/job/web/plan", R"({"Job":{"ID":"web",)");
  EXPECT_TRUE(Contains(std::string(garbled.status().message()), "400")) << garbled.status();
  const std::string broken = agent_.WriteFile("broken.hcl", "job \"web\" {\n  group {\n");
  CliResult plan = agent_.Cli({"job", "plan", broken});
  EXPECT_EQ(plan.exit_code, 255) << plan.out << plan.err;
  EXPECT_TRUE(Contains(plan.err, "Error getting job struct: Error parsing job file from"))
      << plan.err;
  EXPECT_EQ(agent_.Get("/v1/job/web")["Version"], 1);
}

}  // namespace
}  // namespace drover::integration
