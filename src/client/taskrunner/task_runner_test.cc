#include "client/taskrunner/task_runner.h"

#include <gtest/gtest.h>

#include "client/client_test_util.h"
#include "client/taskrunner/task_runner_fixture.h"
#include "drivers/mock/mock_driver.h"
#include "testing/test_util.h"

namespace drover::taskrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT
using client::test::EventTypes;
using client::test::MakeAlloc;
using client::test::MockTask;
using Types = std::vector<std::string>;

TEST_F(TaskRunnerTest, BatchSuccessRunsOnceAndEndsDeadNotFailed) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "5s"}})}, "batch",
                           {.attempts = 3, .interval = 24h, .delay = 15s, .mode = "fail"}));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  const auto& s = tr->state();
  EXPECT_EQ(s.state, "dead");
  EXPECT_FALSE(s.failed);
  EXPECT_EQ(s.restarts, 0u);
  EXPECT_EQ(EventTypes(s), (Types{"Received", "Task Setup", "Started", "Terminated"}));
  EXPECT_EQ(s.events.back().details.at("exit_code"), "0");
  EXPECT_EQ(s.finished_at - s.started_at, 5s);
  EXPECT_EQ(driver_.starts(), 1);
  EXPECT_GT(state_changes_, 0);
}

TEST_F(TaskRunnerTest, RestartsWithinPolicyThenFailsInModeFail) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1s"}, {"exit_code", 1}})}, "service",
                           {.attempts = 2, .interval = 30min, .delay = 15s, .mode = "fail"}));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  const auto& s = tr->state();
  EXPECT_TRUE(s.failed);
  EXPECT_EQ(s.restarts, 2u);
  EXPECT_EQ(driver_.starts(), 3);
  // The ring keeps the last 10: the final Not Restarting pushed Received out.
  EXPECT_EQ(EventTypes(s),
            (Types{"Task Setup", "Started", "Terminated", "Restarting", "Started", "Terminated",
                   "Restarting", "Started", "Terminated", "Not Restarting"}));
  EXPECT_EQ(s.events.back().restart_reason,
            "Exceeded allowed attempts 2 in interval 30m0s and mode is \"fail\"");
}

TEST_F(TaskRunnerTest, UnrecoverableStartErrorFailsAtOnce) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"start_error", "exec: no such file"}})}, "service",
                           {.attempts = 5, .interval = 30min, .delay = 15s, .mode = "delay"}));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  const auto& s = tr->state();
  EXPECT_TRUE(s.failed);
  EXPECT_EQ(EventTypes(s), (Types{"Received", "Task Setup", "Driver Failure", "Not Restarting"}));
  EXPECT_EQ(s.events[2].driver_error, "exec: no such file");
  EXPECT_EQ(s.events[3].restart_reason, "Error was unrecoverable");
}

TEST_F(TaskRunnerTest, KillStopsRunningTaskWithKillingTerminatedKilled) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->state().state == "running"; }));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()).SetKillTimeout(5s));
  ASSERT_TRUE(RunToEnd(*tr));
  const auto& s = tr->state();
  EXPECT_FALSE(s.failed);
  EXPECT_EQ(EventTypes(s),
            (Types{"Received", "Task Setup", "Started", "Killing", "Terminated", "Killed"}));
}

TEST_F(TaskRunnerTest, AnExitThatCameWithAShutdownIsRecorded) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "10s"}, {"exit_code", 3}})}, "batch",
                           {.attempts = 0, .interval = 24h, .delay = 15s, .mode = "fail"}));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->state().state == "running"; }));
  io_.poll();  // settled: the runner waits for the exit
  // The task exits; the agent shuts down before the runner has resumed to see it.
  const std::string id = driver_.started_configs().back().id;
  auto exited = [&] {
    auto st = driver_.InspectTask(id);
    return st.ok() && st->state == drivers::TaskRunState::kExited;
  };
  clock_.Advance(10s);
  for (int i = 0; i < 1000 && !exited(); ++i)
    io_.poll_one();
  ASSERT_TRUE(exited());
  tr->Shutdown();
  ASSERT_TRUE(RunUntil([&] { return tr->done(); }));
  // Recorded now, not left "running" for the next agent to find out.
  const auto& s = tr->state();
  ASSERT_EQ(EventTypes(s),
            (Types{"Received", "Task Setup", "Started", "Terminated", "Not Restarting"}));
  EXPECT_EQ(s.events[3].details.at("exit_code"), "3");
  EXPECT_EQ(s.state, "dead");
  EXPECT_TRUE(s.failed);
}

TEST_F(TaskRunnerTest, KillDuringRestartDelayEndsDead) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1s"}, {"exit_code", 1}})}, "service",
                           {.attempts = 2, .interval = 30min, .delay = 1h, .mode = "fail"}));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->state().restarts == 1; }));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(tr->state().events.back().type, "Killed");
  EXPECT_EQ(driver_.starts(), 1);
}

TEST_F(TaskRunnerTest, KillWithUnusableSignalStillStopsTheTask) {
  auto task = MockTask("t", {{"run_for", "1h"}});
  task.kill_signal = "SIGNOPE";  // validation rejects this; the runner must cope anyway
  auto tr = Make(MakeAlloc({task}));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(EventTypes(tr->state()).back(), "Killed");
  EXPECT_EQ(tr->state().state, "dead");
}

TEST_F(TaskRunnerTest, KillBeforeStartEndsWithKilled) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(EventTypes(tr->state()), (Types{"Received", "Killing", "Killed"}));
  EXPECT_EQ(driver_.starts(), 0);
}

TEST_F(TaskRunnerTest, MarkFailedKillNeverStarts) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  tr->MarkFailedKill("pre-run hook failed");
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_TRUE(tr->state().failed);
  EXPECT_EQ(driver_.starts(), 0);
  EXPECT_EQ(EventTypes(tr->state()), (Types{"Received", "Setup Failure"}));
}

TEST_F(TaskRunnerTest, SignalNeedsARunningTask) {
  auto tr = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  EXPECT_EQ(tr->Signal("SIGHUP").message(), "Task not running");
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  EXPECT_TRUE(tr->Signal("SIGHUP").ok());
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
}

}  // namespace
}  // namespace drover::taskrunner

namespace drover::taskrunner {
namespace {

TEST_F(TaskRunnerTest, UserRestartStopsAndStartsAgainWithoutUsingThePolicy) {
  auto tr = Make(
      MakeAlloc({MockTask("t", {{"run_for", "1h"}})}, "service", {.attempts = 0, .mode = "fail"}));
  EXPECT_EQ(tr->Restart(model::TaskEvent("Restart Signaled", clock_.Now()), false).message(),
            "Task not running");
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  ASSERT_TRUE(tr->Restart(model::TaskEvent("Restart Signaled", clock_.Now())
                              .SetRestartReason("User requested task to restart"),
                          false)
                  .ok());
  ASSERT_TRUE(RunUntil([&] { return driver_.starts() == 2 && tr->running(); }));
  EXPECT_EQ(tr->state().restarts, 1u);
  EXPECT_FALSE(tr->state().failed);
  EXPECT_EQ(EventTypes(tr->state()), (Types{"Received", "Task Setup", "Started", "Restart Signaled",
                                            "Terminated", "Restarting", "Started"}));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(EventTypes(tr->state()).back(), "Killed");
}

}  // namespace
}  // namespace drover::taskrunner

namespace drover::taskrunner {
namespace {

TEST_F(TaskRunnerTest, KillWaitsShutdownDelayBeforeStopping) {
  auto task = MockTask("t", {{"run_for", "1h"}});
  task.shutdown_delay = 10s;
  auto tr = Make(MakeAlloc({task}));
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  const common::Time killed_at = clock_.Now();
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(EventTypes(tr->state()), (Types{"Received", "Task Setup", "Started", "Killing",
                                            "Waiting for shutdown delay", "Terminated", "Killed"}));
  EXPECT_EQ(tr->state().finished_at - killed_at, 10s);
  EXPECT_EQ(tr->state().events[4].display_message,
            "Waiting for shutdown_delay of 10s before killing the task.");
}

TEST_F(TaskRunnerTest, TheDriversStartSlotsBoundHowManyTasksStartAtOnce) {
  driver_.LimitStarts(1);
  auto a = Make(MakeAlloc({MockTask("t", {{"start_block_for", "10s"}, {"run_for", "1h"}})}));
  auto b = Make(MakeAlloc({MockTask("t", {{"start_block_for", "10s"}, {"run_for", "1h"}})}));
  const common::Time t0 = clock_.Now();
  Start(*a);
  Start(*b);
  ASSERT_TRUE(RunUntil([&] { return driver_.start_slots()->waiting() == 1; }));
  // b waits for a's slot before its prestart: it has not even set up yet.
  EXPECT_EQ(EventTypes(b->state()), (Types{"Received"}));
  EXPECT_EQ(a->state().state, "pending");
  ASSERT_TRUE(RunUntil([&] { return b->state().state == "running"; }));
  EXPECT_EQ(a->state().started_at - t0, 10s);
  EXPECT_EQ(b->state().started_at - t0, 20s);  // one start after the other
  EXPECT_EQ(driver_.start_slots()->available(), 1);
  ASSERT_TRUE(RunToEnd(*a));
  ASSERT_TRUE(RunToEnd(*b));
}

TEST_F(TaskRunnerTest, AKillWhileWaitingForAStartSlotEndsTheTaskUnstarted) {
  driver_.LimitStarts(1);
  auto a = Make(MakeAlloc({MockTask("t", {{"start_block_for", "1h"}, {"run_for", "1h"}})}));
  auto b = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  Start(*a);
  Start(*b);
  ASSERT_TRUE(RunUntil([&] { return driver_.start_slots()->waiting() == 1; }));
  b->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*b));
  EXPECT_EQ(b->state().state, "dead");
  for (const std::string& type : EventTypes(b->state()))
    EXPECT_NE(type, "Started");
  EXPECT_EQ(driver_.start_slots()->waiting(), 0u);
  ASSERT_TRUE(RunToEnd(*a));
  EXPECT_EQ(driver_.starts(), 1);  // a's; b never started
  EXPECT_EQ(driver_.start_slots()->available(), 1);
}

}  // namespace
}  // namespace drover::taskrunner
