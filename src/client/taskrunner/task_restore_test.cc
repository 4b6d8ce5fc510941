// TaskRunner::Restore: picking a task up again after an agent restart. The mock driver
// outlives the "agents" (runners), as a supervisor keeps tasks running.
#include <gtest/gtest.h>

#include "client/taskrunner/task_runner_fixture.h"

namespace drover::taskrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT
using client::test::EventTypes;
using client::test::MakeAlloc;
using client::test::MockTask;
using Types = std::vector<std::string>;

class TaskRestoreTest : public TaskRunnerTest {
 protected:
  // Runs a first runner until its task runs, then shuts it down (the task keeps
  // running) and returns what it would have persisted.
  std::pair<model::TaskState, LocalState> RunThenShutdown(
      std::shared_ptr<const model::Allocation> alloc) {
    auto tr = Make(alloc);
    Start(*tr);
    EXPECT_TRUE(RunUntil([&] { return tr->running(); }));
    tr->Shutdown();
    EXPECT_TRUE(RunUntil([&] { return tr->done(); }));
    return {tr->state(), tr->local_state()};
  }
};

TEST_F(TaskRestoreTest, RunningTaskIsReattachedNotStartedAgain) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})});
  auto [state, local] = RunThenShutdown(alloc);
  ASSERT_TRUE(local.handle.has_value());
  auto tr = Make(alloc);
  tr->Restore(state, local);
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  EXPECT_EQ(driver_.starts(), 1);
  EXPECT_EQ(EventTypes(tr->state()), (Types{"Received", "Task Setup", "Started"}));
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(EventTypes(tr->state()),
            (Types{"Received", "Task Setup", "Started", "Killing", "Terminated", "Killed"}));
}

TEST_F(TaskRestoreTest, AReattachedTaskTakesNoStartSlot) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})});
  auto [state, local] = RunThenShutdown(alloc);
  ASSERT_TRUE(local.handle.has_value());
  driver_.LimitStarts(1);
  // Another task's start holds the node's only slot for an hour.
  auto other = Make(MakeAlloc({MockTask("t", {{"start_block_for", "1h"}, {"run_for", "1h"}})}));
  Start(*other);
  ASSERT_TRUE(RunUntil([&] { return driver_.start_slots()->available() == 0; }));
  auto tr = Make(alloc);
  tr->Restore(state, local);
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  EXPECT_EQ(other->state().state, "pending");  // still starting: the slot is still its
  EXPECT_EQ(driver_.start_slots()->waiting(), 0u);
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
  ASSERT_TRUE(RunToEnd(*other));
}

TEST_F(TaskRestoreTest, RestartCountsAndEventsContinue) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})});
  auto [state, local] = RunThenShutdown(alloc);
  state.restarts = 3;
  auto tr = Make(alloc);
  tr->Restore(state, local);
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  ASSERT_TRUE(tr->Restart(model::TaskEvent("Restart Signaled", clock_.Now()), false).ok());
  ASSERT_TRUE(RunUntil([&] { return tr->running() && tr->state().restarts == 4; }));
  EXPECT_EQ(driver_.starts(), 2);
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
}

// The attempts a restart policy already used stay used across an agent restart: the
// restored runner does not grant them again.
TEST_F(TaskRestoreTest, TheRestartPolicysUsedAttemptsSurviveARestore) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "10ms"}, {"exit_code", 1}})}, "batch",
                         {.attempts = 2, .interval = 1h, .delay = 1s, .mode = "fail"});
  LocalState local;
  local.restarts = RestartWindow{.start_unix_nanos = common::ToUnixNanos(clock_.Now()), .count = 2};
  model::TaskState state;
  state.state = model::kTaskStatePending;
  state.restarts = 2;
  auto tr = Make(alloc);
  tr->Restore(state, local);
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(driver_.starts(), 1);  // the third attempt: no fourth
  EXPECT_EQ(EventTypes(tr->state()).back(), "Not Restarting");
  EXPECT_EQ(tr->local_state().restarts->count, 3);
}

// A run whose end was recorded (its handle gone, its Terminated event kept) but not what
// came next is not run again: the restart decision is made from that end.
TEST_F(TaskRestoreTest, ARunWhoseEndWasRecordedIsNotRunAgain) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})}, "batch");
  model::TaskState state;
  state.state = model::kTaskStateRunning;
  state.events.push_back(model::TaskEvent(model::kEventStarted, clock_.Now()));
  model::TaskEvent term(model::kEventTerminated, clock_.Now());
  term.SetExitCode(0);
  state.events.push_back(term);
  auto tr = Make(alloc);
  tr->Restore(state, LocalState{});
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  EXPECT_EQ(driver_.starts(), 0);
  EXPECT_EQ(tr->state().state, model::kTaskStateDead);
  EXPECT_FALSE(tr->state().failed);
}

TEST_F(TaskRestoreTest, LostTaskWaitsForTheServersThenStartsAgain) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})});
  auto [state, local] = RunThenShutdown(alloc);
  // The task died with the node: the driver cannot find it.
  ASSERT_TRUE(driver_.DestroyTask(local.handle->task_id, true).ok());
  common::Event contacted(io_.get_executor());
  wait_servers_contacted_ = [&contacted] { return contacted.Wait(); };
  auto tr = Make(alloc);
  tr->Restore(state, local);
  EXPECT_EQ(tr->state().state, "pending");
  EXPECT_EQ(tr->state().events.back().type, "Failed Restoring Task");
  EXPECT_FALSE(tr->local_state().handle.has_value());
  Start(*tr);
  while (io_.poll() > 0) {
  }
  EXPECT_EQ(driver_.starts(), 1);  // not started before the servers answer
  contacted.Set();
  ASSERT_TRUE(RunUntil([&] { return tr->running(); }));
  EXPECT_EQ(driver_.starts(), 2);
  tr->RequestKill(std::nullopt);
  ASSERT_TRUE(RunToEnd(*tr));
}

TEST_F(TaskRestoreTest, CompletedTaskIsNotRunAgain) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1s"}})}, "batch");
  auto first = Make(alloc);
  Start(*first);
  ASSERT_TRUE(RunToEnd(*first));
  ASSERT_TRUE(first->local_state().run_complete);
  const model::TaskState state = first->state();
  const LocalState local = first->local_state();
  first.reset();
  auto tr = Make(alloc);
  tr->Restore(state, local);
  Start(*tr);
  ASSERT_TRUE(RunUntil([&] { return tr->done(); }));
  EXPECT_EQ(driver_.starts(), 1);
  EXPECT_EQ(tr->state().state, "dead");
}

TEST_F(TaskRestoreTest, KillBeforeReattachStillStopsTheRestoredTask) {
  auto alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})});
  auto [state, local] = RunThenShutdown(alloc);
  auto tr = Make(alloc);
  tr->Restore(state, local);
  tr->RequestKill(model::TaskEvent("Killing", clock_.Now()));
  Start(*tr);
  ASSERT_TRUE(RunToEnd(*tr));
  auto status = driver_.InspectTask(local.handle->task_id);
  EXPECT_FALSE(status.ok() && status->state == drivers::TaskRunState::kRunning);
  const auto types = EventTypes(tr->state());
  EXPECT_EQ(types.back(), "Killed");
  EXPECT_NE(std::find(types.begin(), types.end(), "Terminated"), types.end());
}

}  // namespace
}  // namespace drover::taskrunner
