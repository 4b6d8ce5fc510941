// The scheduler configuration through the CLI against a real agent: pausing the eval
// broker holds evaluations, `drover eval delete` works only while it is paused, and
// what Drover does not do (preemption, other algorithms) is refused by name.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(AgentTest, APausedEvalBrokerHoldsEvaluationsAndLetsThemBeDeleted) {
  CliResult get = agent_.Cli({"operator", "scheduler", "get-config"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_TRUE(Contains(get.out, "Pause Eval Broker             = false")) << get.out;

  // Not while the broker runs.
  const std::string file = agent_.WriteFile("b.json", RawExecJob("b1", "batch", "true"));
  ASSERT_EQ(agent_.Cli({"job", "run", file}).exit_code, 0);
  const std::string first = agent_.Get("/v1/job/b1/evaluations")[0]["ID"];
  CliResult refused = agent_.Cli({"eval", "delete", first});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(Contains(refused.err, "Eval broker is not paused")) << refused.err;

  ASSERT_EQ(
      agent_.Cli({"operator", "scheduler", "set-config", "-pause-eval-broker=true"}).exit_code, 0);
  // A registration's evaluation waits, pending.
  const std::string held = agent_.WriteFile("h.json", RawExecJob("held", "batch", "true"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", held}).exit_code, 0);
  const std::string pending = agent_.Get("/v1/job/held/evaluations")[0]["ID"];
  EXPECT_EQ(agent_.Get("/v1/evaluation/" + pending)["Status"], "pending");
  EXPECT_TRUE(agent_.Get("/v1/job/held/allocations").empty());

  // The finished batch job's evaluation may go; then it is gone.
  ASSERT_TRUE(testing::WaitFor([&] { return agent_.Get("/v1/job/b1")["Status"] == "dead"; }, 30s));
  CliResult deleted = agent_.Cli({"eval", "delete", first});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "Successfully deleted 1 evaluation\n");
  auto gone = agent_.http().Do("GET", "/v1/evaluation/" + first);
  EXPECT_FALSE(gone.ok());

  CliResult preempt =
      agent_.Cli({"operator", "scheduler", "set-config", "-preempt-service-scheduler=true"});
  EXPECT_EQ(preempt.exit_code, 1);
  EXPECT_TRUE(Contains(preempt.err, "preemption is not supported by Drover yet")) << preempt.err;

  ASSERT_EQ(
      agent_.Cli({"operator", "scheduler", "set-config", "-pause-eval-broker=false"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitFor(
      [&] { return agent_.Get("/v1/evaluation/" + pending)["Status"] == "complete"; }, 30s));
  codec::Json config = agent_.Get("/v1/operator/scheduler/configuration");
  EXPECT_FALSE(config["SchedulerConfig"]["PauseEvalBroker"].get<bool>());
  EXPECT_GT(config["SchedulerConfig"]["ModifyIndex"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace drover::integration
