// Alloc hooks and what they carry: restart of the whole allocation, update and destroy
// hooks, the group shutdown_delay, waiting for and migrating from a previous
// allocation, the broadcaster and agent shutdown.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "client/allocrunner/alloc_runner_fixture.h"
#include "client/client_test_util.h"

namespace drover::allocrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT
using client::test::MakeAlloc;
using client::test::MockTask;
using Types = std::vector<std::string>;

class RecordingAllocHook : public AllocHook {
 public:
  explicit RecordingAllocHook(std::vector<std::string>* log, bool fail_destroy = false)
      : log_(log), fail_destroy_(fail_destroy) {}
  std::string_view Name() const override { return "recorder"; }
  asio::awaitable<absl::Status> Prerun() override {
    log_->push_back("prerun");
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> Update(std::shared_ptr<const model::Allocation>) override {
    log_->push_back("update");
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> Postrun() override {
    log_->push_back("postrun");
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> Destroy() override {
    log_->push_back("destroy");
    if (fail_destroy_)
      throw std::runtime_error("destroy hook exploded");
    co_return absl::OkStatus();
  }
  asio::awaitable<void> PreKill() override {
    log_->push_back("prekill");
    co_return;
  }
  asio::awaitable<void> Shutdown() override {
    log_->push_back("shutdown");
    co_return;
  }

 private:
  std::vector<std::string>* log_;
  bool fail_destroy_;
};

class AllocHooksTest : public AllocRunnerTest {
 protected:
  std::function<void(AllocRunnerConfig&)> WithRecorder(bool fail_destroy = false) {
    return [this, fail_destroy](AllocRunnerConfig& c) {
      c.extra_hooks = [this, fail_destroy] {
        std::vector<AllocHookPtr> out;
        out.push_back(std::make_unique<RecordingAllocHook>(&log_, fail_destroy));
        return out;
      };
    };
  }
  std::shared_ptr<model::Allocation> Stopped(const model::Allocation& a, uint64_t index) {
    auto s = std::make_shared<model::Allocation>(a);
    s->desired_status = model::kDesiredStop;
    s->alloc_modify_index = index;
    return s;
  }
  static std::shared_ptr<model::Allocation> LifecycleAlloc() {
    auto init = MockTask("init", {{"run_for", "1s"}});
    init.lifecycle = model::Lifecycle{"prestart", false};
    auto post = MockTask("post", {{"run_for", "1s"}});
    post.lifecycle = model::Lifecycle{"poststop", false};
    return MakeAlloc({init, MockTask("main", {{"run_for", "1h"}}), post});
  }
  static void WriteFile(const std::filesystem::path& p, const std::string& content) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  std::vector<std::string> log_;
};

TEST_F(AllocHooksTest, RestartAllRerunsPrestartTasksBeforeMainAndLeavesPoststop) {
  auto ar = Make(LifecycleAlloc());
  Start(*ar);
  auto* init = ar->task_runner("init");
  auto* main = ar->task_runner("main");
  auto* post = ar->task_runner("post");
  ASSERT_TRUE(RunUntil([&] { return main->running(); }));
  ASSERT_TRUE(init->parked());
  ASSERT_TRUE(ar->RestartAll("because").ok());
  ASSERT_TRUE(RunUntil([&] { return main->running() && main->state().restarts == 1; }));
  EXPECT_EQ(init->state().restarts, 1u);
  EXPECT_EQ(init->state().state, "dead");
  EXPECT_FALSE(init->state().failed);
  // The prestart task ran again, to completion, before main started again.
  EXPECT_LE(init->state().finished_at, main->state().started_at);
  EXPECT_EQ(driver_.starts(), 4);
  EXPECT_EQ(post->state().state, "pending");
  EXPECT_EQ(post->state().restarts, 0u);
  Destroy(*ar);
}

TEST_F(AllocHooksTest, RestartRunningLeavesDeadTasksAlone) {
  auto ar = Make(LifecycleAlloc());
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("main")->running(); }));
  ASSERT_TRUE(ar->RestartRunning("because").ok());
  ASSERT_TRUE(RunUntil([&] {
    return ar->task_runner("main")->running() && ar->task_runner("main")->state().restarts == 1;
  }));
  EXPECT_EQ(ar->task_runner("init")->state().restarts, 0u);
  EXPECT_EQ(driver_.starts(), 3);
  Destroy(*ar);
}

// Parked (dead) tasks are released once nothing is alive, so Run finishes.
TEST_F(AllocHooksTest, CompletedAllocRunsPostrunAndFinishes) {
  auto ar = Make(MakeAlloc({MockTask("a", {{"run_for", "1s"}})}, "batch"), WithRecorder());
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  EXPECT_EQ(log_, (Types{"prerun", "postrun"}));
  EXPECT_FALSE(ar->RestartAll("too late").ok());
}

TEST_F(AllocHooksTest, UpdateHooksRunForUpdatesButNotForAStop) {
  auto alloc = MakeAlloc({MockTask("a", {{"run_for", "1h"}})});
  auto ar = Make(alloc, WithRecorder());
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("a")->running(); }));
  auto newer = std::make_shared<model::Allocation>(*alloc);
  newer->alloc_modify_index = 11;
  ar->Update(newer);
  ASSERT_TRUE(RunUntil([&] { return log_.size() == 2; }));
  ar->Update(Stopped(*alloc, 12));
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  EXPECT_EQ(log_, (Types{"prerun", "update", "prekill", "postrun"}));
  Destroy(*ar);
  EXPECT_EQ(log_.back(), "destroy");
}

TEST_F(AllocHooksTest, ThrowingDestroyHookStillRemovesTheAllocDir) {
  auto ar = Make(MakeAlloc({MockTask("a", {{"run_for", "1h"}})}), WithRecorder(true));
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("a")->running(); }));
  Destroy(*ar);
  EXPECT_EQ(log_.back(), "destroy");
  EXPECT_FALSE(std::filesystem::exists(ar->alloc_dir().dir()));
  EXPECT_EQ(ar->task_runner("a")->state().state, "dead");
}

TEST_F(AllocHooksTest, GroupShutdownDelayIsWaitedBeforeTasksAreKilled) {
  auto alloc = MakeAlloc({MockTask("a", {{"run_for", "1h"}})});
  auto job = std::make_shared<model::Job>(*alloc->job);
  job->task_groups[0].shutdown_delay = 7s;
  alloc->job = job;
  auto ar = Make(alloc);
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("a")->running(); }));
  const common::Time stopped_at = clock_.Now();
  ar->Update(Stopped(*alloc, 11));
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  EXPECT_EQ(ar->task_runner("a")->state().finished_at - stopped_at, 7s);
  Destroy(*ar);
}

TEST_F(AllocHooksTest, BroadcasterHoldsOnlyTheLatestClientReport) {
  auto ar = Make(MakeAlloc({MockTask("a", {{"run_for", "1s"}})}, "batch"));
  auto listener = ar->broadcaster().Listen();
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->run_done(); }));
  std::optional<allocwatcher::AllocStatePtr> got;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { got = co_await listener->Next(); }, asio::detached);
  ASSERT_TRUE(RunUntil([&] { return got.has_value(); }));
  ASSERT_TRUE(*got);
  EXPECT_EQ((**got).client_status, "complete");  // pending/running were replaced
  EXPECT_EQ((**got).task_states.at("a").state, "dead");
  Destroy(*ar);
  std::optional<allocwatcher::AllocStatePtr> after = std::make_shared<model::AllocClientUpdate>();
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { after = co_await listener->Next(); }, asio::detached);
  ASSERT_TRUE(RunUntil([&] { return !after.has_value(); }));  // closed by Destroy
}

class PrevAllocTest : public AllocHooksTest {
 protected:
  // A replacement of `prev` whose group has the given ephemeral disk.
  std::unique_ptr<AllocRunner> MakeReplacement(AllocRunner& prev, bool sticky) {
    auto alloc = MakeAlloc({MockTask("web", {{"run_for", "1h"}})});
    auto job = std::make_shared<model::Job>(*alloc->job);
    job->task_groups[0].ephemeral_disk = model::EphemeralDisk{.sticky = sticky};
    alloc->job = job;
    alloc->id = "a1b2c3d4-0000-4000-8000-000000000002";
    alloc->previous_allocation = prev.id();
    allocwatcher::LocalPrevAlloc local{.alloc_id = prev.id(),
                                       .listener = prev.broadcaster().Listen(),
                                       .alloc_dir = prev.alloc_dir().dir()};
    return Make(alloc, [&](AllocRunnerConfig& c) {
      c.prev_alloc = allocwatcher::LocalWatcher(std::move(local), sticky, pool_);
    });
  }
  std::shared_ptr<model::Allocation> PrevAlloc() {
    return MakeAlloc({MockTask("web", {{"run_for", "1h"}})});
  }
};

TEST_F(PrevAllocTest, ReplacementWaitsForThePreviousAllocAndTakesItsData) {
  auto prev_alloc = PrevAlloc();
  auto prev = Make(prev_alloc);
  Start(*prev);
  ASSERT_TRUE(RunUntil([&] { return prev->task_runner("web")->running(); }));
  WriteFile(prev->alloc_dir().data_dir() / "db" / "state", "precious");
  WriteFile(prev->alloc_dir().task_dir("web").local / "cache", "warm");
  WriteFile(prev->alloc_dir().logs_dir() / "extra.log", "not migrated");

  auto next = MakeReplacement(*prev, /*sticky=*/true);
  Start(*next);
  ASSERT_TRUE(RunUntil([&] { return next->IsWaiting(); }));
  EXPECT_EQ(driver_.starts(), 1);     // the replacement's task waits
  EXPECT_FALSE(next->prerun_done());  // the client GC must keep `prev` meanwhile

  prev->Update(Stopped(*prev_alloc, 11));
  ASSERT_TRUE(RunUntil([&] { return next->task_runner("web")->running(); }));
  EXPECT_TRUE(prev->run_done());
  EXPECT_TRUE(next->prerun_done());
  EXPECT_EQ(testing::ReadFile(next->alloc_dir().data_dir() / "db" / "state"), "precious");
  EXPECT_EQ(testing::ReadFile(next->alloc_dir().task_dir("web").local / "cache"), "warm");
  EXPECT_FALSE(std::filesystem::exists(next->alloc_dir().logs_dir() / "extra.log"));
  EXPECT_FALSE(std::filesystem::exists(prev->alloc_dir().data_dir() / "db"));
  Destroy(*next);
  Destroy(*prev);
}

TEST_F(PrevAllocTest, WithoutStickyDiskTheReplacementWaitsButStartsEmpty) {
  auto prev_alloc = PrevAlloc();
  auto prev = Make(prev_alloc);
  Start(*prev);
  ASSERT_TRUE(RunUntil([&] { return prev->task_runner("web")->running(); }));
  WriteFile(prev->alloc_dir().data_dir() / "f", "x");
  auto next = MakeReplacement(*prev, /*sticky=*/false);
  Start(*next);
  ASSERT_TRUE(RunUntil([&] { return next->IsWaiting(); }));
  prev->Update(Stopped(*prev_alloc, 11));
  ASSERT_TRUE(RunUntil([&] { return next->task_runner("web")->running(); }));
  EXPECT_FALSE(std::filesystem::exists(next->alloc_dir().data_dir() / "f"));
  EXPECT_TRUE(std::filesystem::exists(prev->alloc_dir().data_dir() / "f"));
  Destroy(*next);
  Destroy(*prev);
}

// A failed migration is soft: logged, and the alloc starts with a fresh directory.
TEST_F(PrevAllocTest, FailedMigrationStartsWithAFreshDir) {
  auto prev_alloc = PrevAlloc();
  auto prev = Make(prev_alloc);
  Start(*prev);
  ASSERT_TRUE(RunUntil([&] { return prev->task_runner("web")->running(); }));
  WriteFile(prev->alloc_dir().data_dir() / "f", "x");
  auto next = MakeReplacement(*prev, /*sticky=*/true);
  Start(*next);
  ASSERT_TRUE(RunUntil([&] { return next->IsWaiting(); }));
  // A non-empty target makes the move fail.
  WriteFile(next->alloc_dir().data_dir() / "in-the-way", "y");
  prev->Update(Stopped(*prev_alloc, 11));
  ASSERT_TRUE(RunUntil([&] { return next->task_runner("web")->running(); }));
  EXPECT_FALSE(std::filesystem::exists(next->alloc_dir().data_dir() / "in-the-way"));
  EXPECT_FALSE(std::filesystem::exists(next->alloc_dir().data_dir() / "f"));
  EXPECT_TRUE(std::filesystem::is_directory(next->alloc_dir().data_dir()));
  // The task is told why its disk is empty.
  bool told = false;
  for (const model::TaskEvent& ev : next->task_runner("web")->state().events)
    told |= ev.type == model::kEventDiskNotMigrated;
  EXPECT_TRUE(told);
  Destroy(*next);
  Destroy(*prev);
}

TEST_F(PrevAllocTest, DestroyWhileWaitingReturnsWithoutStartingTasks) {
  auto prev = Make(PrevAlloc());
  Start(*prev);
  ASSERT_TRUE(RunUntil([&] { return prev->task_runner("web")->running(); }));
  auto next = MakeReplacement(*prev, /*sticky=*/true);
  Start(*next);
  ASSERT_TRUE(RunUntil([&] { return next->IsWaiting(); }));
  Destroy(*next);
  EXPECT_EQ(driver_.starts(), 1);
  EXPECT_EQ(next->task_runner("web")->state().state, "dead");
  EXPECT_FALSE(next->task_runner("web")->state().failed);  // stopped, not failed
  EXPECT_TRUE(prev->task_runner("web")->running());
  Destroy(*prev);
}

TEST_F(PrevAllocTest, DestroyedPreviousRunnerCountsAsGone) {
  auto prev = Make(PrevAlloc());
  Start(*prev);
  ASSERT_TRUE(RunUntil([&] { return prev->task_runner("web")->running(); }));
  auto next = MakeReplacement(*prev, /*sticky=*/false);
  Start(*next);
  ASSERT_TRUE(RunUntil([&] { return next->IsWaiting(); }));
  Destroy(*prev);
  ASSERT_TRUE(RunUntil([&] { return next->task_runner("web")->running(); }));
  Destroy(*next);
}

TEST_F(AllocHooksTest, ShutdownLeavesTasksRunning) {
  auto ar = Make(MakeAlloc({MockTask("a", {{"run_for", "1h"}})}), WithRecorder());
  Start(*ar);
  ASSERT_TRUE(RunUntil([&] { return ar->task_runner("a")->running(); }));
  bool shut = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await ar->Shutdown();
        shut = true;
      },
      asio::detached);
  ASSERT_TRUE(RunUntil([&] { return shut; }));
  EXPECT_TRUE(ar->run_done());
  EXPECT_EQ(log_, (Types{"prerun", "shutdown"}));  // no postrun, no prekill
  EXPECT_EQ(ar->task_runner("a")->state().state, "running");
  EXPECT_TRUE(std::filesystem::exists(ar->alloc_dir().dir()));
  // End the task the way an adopting agent would, so the fixture can tear down.
  const std::string id = ar->task_runner("a")->local_state().handle->task_id;
  EXPECT_TRUE(driver_.DestroyTask(id, true).ok());
  while (io_.poll() > 0) {
  }
}

TEST_F(AllocHooksTest, RestoreReattachesAndKeepsTheLifecycleStage) {
  auto alloc = LifecycleAlloc();
  auto first = Make(alloc);
  Start(*first);
  ASSERT_TRUE(RunUntil([&] { return first->task_runner("main")->running(); }));
  asio::co_spawn(io_, first->Shutdown(), asio::detached);
  ASSERT_TRUE(RunUntil([&] { return first->run_done(); }));
  std::map<std::string, model::TaskState> states;
  std::map<std::string, taskrunner::LocalState> local;
  for (auto* tr : first->task_runners()) {
    states[tr->name()] = tr->state();
    local[tr->name()] = tr->local_state();
  }
  first.reset();

  auto second = Make(alloc);
  ASSERT_TRUE(second->Restore(states, local).ok());
  Start(*second);
  ASSERT_TRUE(RunUntil([&] { return second->task_runner("main")->running(); }));
  EXPECT_EQ(driver_.starts(), 2);  // init and main once each, none again
  EXPECT_EQ(second->task_runner("init")->state().state, "dead");
  EXPECT_EQ(second->task_runner("post")->state().state, "pending");
  EXPECT_EQ(updates_.back().client_status, "running");
  Destroy(*second);
  EXPECT_EQ(second->task_runner("main")->state().events.back().type, "Killed");
}

TEST_F(AllocHooksTest, RestoreFailsWhenTheAllocDirIsGone) {
  auto ar = Make(MakeAlloc({MockTask("a", {{"run_for", "1h"}})}));
  absl::Status s = ar->Restore({}, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("is missing"), std::string::npos) << s;
  Destroy(*ar);
}

}  // namespace
}  // namespace drover::allocrunner
