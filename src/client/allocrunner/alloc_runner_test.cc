#include "client/allocrunner/alloc_runner.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "client/allocrunner/alloc_runner_fixture.h"
#include "client/client_test_util.h"
#include "drivers/mock/mock_driver.h"
#include "testing/test_util.h"

namespace drover::allocrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT
using client::test::EventTypes;
using client::test::MakeAlloc;
using client::test::MockTask;
using Types = std::vector<std::string>;

TEST_F(AllocRunnerTest, BatchAllocCompletesAndReportsStatusChanges) {
  auto ar = Make(
      MakeAlloc({MockTask("a", {{"run_for", "2s"}}), MockTask("b", {{"run_for", "3s"}})}, "batch"));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  ASSERT_FALSE(updates_.empty());
  EXPECT_EQ(updates_.back().client_status, "complete");
  EXPECT_EQ(updates_.back().client_description, "All tasks have completed");
  bool saw_running = false;
  for (const auto& u : updates_)
    saw_running = saw_running || u.client_status == "running";
  EXPECT_TRUE(saw_running);
  EXPECT_TRUE(std::filesystem::is_directory(ar->alloc_dir().data_dir()));
  Destroy(*ar);
  EXPECT_FALSE(std::filesystem::exists(ar->alloc_dir().dir()));
}

TEST_F(AllocRunnerTest, ReportsHealthOnceTasksRanForMinHealthyTime) {
  auto alloc = MakeAlloc({MockTask("web", {{"run_for", "1h"}})});
  const_cast<model::Job&>(*alloc->job).task_groups[0].migrate =
      model::MigrateStrategy{1, "task_states", 10s, 5min};
  auto ar = Make(alloc);
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return !updates_.empty() && updates_.back().deployment_status; }));
  const model::AllocClientUpdate& u = updates_.back();
  EXPECT_EQ(u.client_status, "running");
  EXPECT_EQ(u.deployment_status->healthy, true);
  const common::Time started = ar->task_runner("web")->state().started_at;
  EXPECT_GE(u.deployment_status->timestamp - started, 10s);
  EXPECT_LT(u.deployment_status->timestamp - started, 11s);
  // Reported once; later updates carry the same verdict.
  Destroy(*ar);
  EXPECT_EQ(updates_.back().deployment_status->healthy, true);
}

// A job stored before migrate blocks were kept has none: Nomad's defaults apply
// (10 s of health). Batch allocations have no health.
TEST_F(AllocRunnerTest, HealthWithoutAMigrateBlockUsesTheDefaultsButNotForBatch) {
  auto ar = Make(MakeAlloc({MockTask("web", {{"run_for", "1m"}})}));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  bool healthy = false;
  for (const auto& u : updates_)
    healthy = healthy || (u.deployment_status && u.deployment_status->healthy == true);
  EXPECT_TRUE(healthy);
  Destroy(*ar);
  updates_.clear();
  auto batch = Make(MakeAlloc({MockTask("job", {{"run_for", "1m"}})}, "batch"));
  Start(*batch);
  ASSERT_TRUE(RunUntil([&] { return batch->run_done(); }));
  for (const auto& u : updates_)
    EXPECT_FALSE(u.deployment_status.has_value());
  Destroy(*batch);
}

// The watcher outlives updates that replace the allocation (and its job) under it.
TEST_F(AllocRunnerTest, HealthIsDecidedAcrossUpdatesOfTheAllocation) {
  auto alloc = MakeAlloc({MockTask("web", {{"run_for", "1h"}})});
  auto ar = Make(alloc);
  Start(*ar);
  ASSERT_TRUE(
      RunUntil([&] { return !updates_.empty() && updates_.back().client_status == "running"; }));
  for (int i = 0; i < 3; ++i) {
    auto copy = std::make_shared<model::Allocation>(*alloc);
    copy->job = std::make_shared<model::Job>(*alloc->job);  // a fresh job, as decoded
    copy->alloc_modify_index = alloc->alloc_modify_index + 1 + i;
    ar->Update(copy);
  }
  alloc.reset();
  ASSERT_TRUE(RunUntil([&] { return !updates_.empty() && updates_.back().deployment_status; }));
  EXPECT_EQ(updates_.back().deployment_status->healthy, true);
  Destroy(*ar);
}

TEST_F(AllocRunnerTest, LeaderExitKillsFollowersAndAllocCompletes) {
  auto leader = MockTask("leader", {{"run_for", "5s"}});
  leader.leader = true;
  auto ar = Make(MakeAlloc({leader, MockTask("follower", {{"run_for", "1h"}})}, "batch"));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  EXPECT_EQ(updates_.back().client_status, "complete");
  const auto& f = ar->task_runner("follower")->state();
  EXPECT_EQ(EventTypes(f), (Types{"Received", "Task Setup", "Started", "Leader Task Dead",
                                  "Killing", "Terminated", "Killed"}));
  EXPECT_FALSE(f.failed);
}

TEST_F(AllocRunnerTest, FailedTaskKillsSiblingsAndFailsAlloc) {
  auto ar = Make(MakeAlloc({MockTask("bad", {{"run_for", "1s"}, {"exit_code", 2}}),
                            MockTask("good", {{"run_for", "1h"}})}));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  EXPECT_EQ(updates_.back().client_status, "failed");
  EXPECT_EQ(updates_.back().client_description, "Failed tasks");
  const auto& good = ar->task_runner("good")->state();
  ASSERT_GE(good.events.size(), 4u);
  auto it = std::find_if(good.events.begin(), good.events.end(),
                         [](const auto& e) { return e.type == "Sibling Task Failed"; });
  ASSERT_NE(it, good.events.end());
  EXPECT_EQ(it->failed_sibling, "bad");
  EXPECT_EQ(good.events.back().type, "Killed");
  EXPECT_FALSE(good.failed);
}

TEST_F(AllocRunnerTest, SidecarsAreKilledWhenMainTasksFinish) {
  auto sidecar = MockTask("proxy", {{"run_for", "1h"}});
  sidecar.lifecycle = model::Lifecycle{"prestart", true};
  auto ar = Make(MakeAlloc({MockTask("main", {{"run_for", "2s"}}), sidecar}, "batch"));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  const auto& s = ar->task_runner("proxy")->state();
  const auto proxy_events = EventTypes(s);
  EXPECT_NE(std::find(proxy_events.begin(), proxy_events.end(), "Main Tasks Dead"),
            proxy_events.end())
      << ::testing::PrintToString(proxy_events)
      << ::testing::PrintToString(EventTypes(ar->task_runner("main")->state()));
  EXPECT_EQ(updates_.back().client_status, "complete");
}

TEST_F(AllocRunnerTest, StopUpdateKillsLeaderFirst) {
  auto leader = MockTask("leader", {{"run_for", "1h"}, {"kill_after", "2s"}});
  leader.leader = true;
  auto ar = Make(MakeAlloc({leader, MockTask("follower", {{"run_for", "1h"}})}));
  Start(*ar);
  ASSERT_TRUE(
      RunUntil([&] { return updates_.size() && updates_.back().client_status == "running"; }));
  auto stopped = std::make_shared<model::Allocation>(*ar->alloc());
  stopped->desired_status = model::kDesiredStop;
  stopped->alloc_modify_index = 20;
  ar->Update(stopped);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  const auto& l = ar->task_runner("leader")->state();
  const auto& f = ar->task_runner("follower")->state();
  EXPECT_LE(l.finished_at, f.finished_at);
  EXPECT_EQ(f.finished_at - l.finished_at, 0s);
  // The follower's kill started only after the leader died.
  auto killing = std::find_if(f.events.begin(), f.events.end(),
                              [](const auto& e) { return e.type == "Killing"; });
  ASSERT_NE(killing, f.events.end());
  EXPECT_GE(killing->time, common::ToUnixNanos(l.finished_at));
  EXPECT_EQ(updates_.back().client_status, "complete");
  EXPECT_EQ(EventTypes(l).back(), "Killed");
}

TEST_F(AllocRunnerTest, StaleUpdatesAreDropped) {
  auto ar = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  auto newer = std::make_shared<model::Allocation>(*ar->alloc());
  newer->alloc_modify_index = 30;
  auto older = std::make_shared<model::Allocation>(*ar->alloc());
  older->alloc_modify_index = 20;
  older->desired_status = model::kDesiredStop;
  ar->Update(newer);
  ar->Update(older);  // must not replace the queued newer one
  Start(*ar);
  ASSERT_TRUE(RunUntil(
      [&] { return ar->alloc()->alloc_modify_index == 30 && ar->task_runner("t")->running(); }));
  EXPECT_EQ(ar->task_runner("t")->state().state, "running");
  Destroy(*ar);
}

TEST_F(AllocRunnerTest, DestroyBeforeRunReturnsPromptly) {
  auto ar = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  Destroy(*ar);
  EXPECT_EQ(driver_.starts(), 0);
  Destroy(*ar);  // idempotent
}

TEST_F(AllocRunnerTest, DestroyKillsRunningTasksAndRemovesDir) {
  auto ar = Make(MakeAlloc({MockTask("t", {{"run_for", "1h"}})}));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("t")->running(); }));
  Destroy(*ar);
  EXPECT_TRUE(ar->run_done());
  EXPECT_EQ(ar->task_runner("t")->state().state, "dead");
  EXPECT_FALSE(std::filesystem::exists(ar->alloc_dir().dir()));
}

TEST_F(AllocRunnerTest, AllocDirFailureFailsEveryTask) {
  // A file where the alloc root should be makes the alloc dir unbuildable.
  const auto root = dir_.path() / "blocked";
  { std::ofstream(root) << "x"; }
  AllocRunnerConfig c;
  c.alloc = MakeAlloc({MockTask("t", {{"run_for", "1h"}})});
  c.alloc_root = root;
  c.node = &node_;
  c.drivers = {{"mock_driver", &driver_}};
  c.clock = &clock_;
  c.pool = &pool_;
  c.on_update = [this](const ReportPtr& u) { updates_.push_back(*u); };
  AllocRunner ar(io_.get_executor(), std::move(c));
  Start(ar);
  ASSERT_TRUE(RunUntil([&] { return ar.run_done(); }));
  EXPECT_EQ(updates_.back().client_status, "failed");
  const auto& s = ar.task_runner("t")->state();
  EXPECT_EQ(EventTypes(s), (Types{"Received", "Setup Failure"}));
  EXPECT_NE(s.events.back().setup_error.find("pre-run hook \"alloc_dir\" failed"),
            std::string::npos);
  EXPECT_EQ(driver_.starts(), 0);
}

}  // namespace
}  // namespace drover::allocrunner

namespace drover::allocrunner {
namespace {

TEST_F(AllocRunnerTest, LifecycleOrderPrestartMainPoststop) {
  auto init = MockTask("init", {{"run_for", "2s"}});
  init.lifecycle = model::Lifecycle{"prestart", false};
  auto cleanup = MockTask("cleanup", {{"run_for", "1s"}});
  cleanup.lifecycle = model::Lifecycle{"poststop", false};
  auto ar = Make(MakeAlloc({init, MockTask("main", {{"run_for", "5s"}}), cleanup}, "batch"));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  const auto& i = ar->task_runner("init")->state();
  const auto& m = ar->task_runner("main")->state();
  const auto& c = ar->task_runner("cleanup")->state();
  EXPECT_LE(i.finished_at, m.started_at);
  EXPECT_LE(m.finished_at, c.started_at);
  EXPECT_EQ(c.finished_at - c.started_at, 1s);
  EXPECT_EQ(updates_.back().client_status, "complete");
}

TEST_F(AllocRunnerTest, FailedPrestartBlocksMainAndFailsAlloc) {
  auto init = MockTask("init", {{"run_for", "1s"}, {"exit_code", 1}});
  init.lifecycle = model::Lifecycle{"prestart", false};
  auto ar = Make(MakeAlloc({init, MockTask("main", {{"run_for", "5s"}})}, "batch"));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  EXPECT_EQ(updates_.back().client_status, "failed");
  EXPECT_EQ(driver_.starts(), 1);  // main never started
  const auto types = EventTypes(ar->task_runner("main")->state());
  EXPECT_NE(std::find(types.begin(), types.end(), "Sibling Task Failed"), types.end());
}

TEST_F(AllocRunnerTest, StopRunsPoststopAfterMainIsKilled) {
  auto cleanup = MockTask("cleanup", {{"run_for", "1s"}});
  cleanup.lifecycle = model::Lifecycle{"poststop", false};
  auto ar = Make(MakeAlloc({MockTask("main", {{"run_for", "1h"}}), cleanup}));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("main")->running(); }));
  EXPECT_EQ(ar->task_runner("cleanup")->state().state, "pending");
  auto stopped = std::make_shared<model::Allocation>(*ar->alloc());
  stopped->desired_status = model::kDesiredStop;
  stopped->alloc_modify_index = 20;
  ar->Update(stopped);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  const auto& c = ar->task_runner("cleanup")->state();
  EXPECT_EQ(EventTypes(c), (Types{"Received", "Task Setup", "Started", "Terminated"}));
  EXPECT_GE(c.started_at, ar->task_runner("main")->state().finished_at);
  EXPECT_EQ(updates_.back().client_status, "complete");
}

}  // namespace
}  // namespace drover::allocrunner

namespace drover::allocrunner {
namespace {

TEST_F(AllocRunnerTest, RestartAndSignalRequests) {
  auto ar =
      Make(MakeAlloc({MockTask("a", {{"run_for", "1h"}}), MockTask("b", {{"run_for", "1h"}})}));
  Start(*ar);
  ASSERT_TRUE(
      RunUntil([&] { return ar->task_runner("a")->running() && ar->task_runner("b")->running(); }));
  EXPECT_TRUE(absl::IsNotFound(ar->RestartTask("nope", "x")));
  EXPECT_TRUE(absl::IsNotFound(ar->Signal("nope", "SIGHUP")));
  ASSERT_TRUE(ar->RestartRunning("User requested running tasks to restart").ok());
  ASSERT_TRUE(RunUntil([&] { return driver_.starts() == 4; }));
  ASSERT_TRUE(
      RunUntil([&] { return ar->task_runner("a")->running() && ar->task_runner("b")->running(); }));
  EXPECT_EQ(ar->task_runner("a")->state().restarts, 1u);
  ASSERT_TRUE(ar->Signal("b", "SIGHUP").ok());
  const auto& events = ar->task_runner("b")->state().events;
  EXPECT_EQ(events.back().type, "Signaling");
  EXPECT_EQ(events.back().display_message, "Task being sent signal SIGHUP: User requested signal");
  Destroy(*ar);
  EXPECT_FALSE(ar->RestartTask("a", "x").ok());
}

}  // namespace
}  // namespace drover::allocrunner

namespace drover::allocrunner {
namespace {

TEST_F(AllocRunnerTest, NoShutdownDelayCutsTheDelayShort) {
  auto task = MockTask("t", {{"run_for", "1h"}});
  task.shutdown_delay = 1h;
  auto ar = Make(MakeAlloc({task}));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("t")->running(); }));
  const common::Time start = clock_.Now();
  auto stopped = std::make_shared<model::Allocation>(*ar->alloc());
  stopped->desired_status = model::kDesiredStop;
  stopped->desired_transition.no_shutdown_delay = true;
  stopped->alloc_modify_index = 20;
  ar->Update(stopped);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  const auto types = EventTypes(ar->task_runner("t")->state());
  EXPECT_NE(std::find(types.begin(), types.end(), "Skipping shutdown delay"), types.end());
  EXPECT_LT(clock_.Now() - start, 1h);
}

}  // namespace
}  // namespace drover::allocrunner
