#include "client/allocrunner/lifecycle_coordinator.h"

#include <gtest/gtest.h>

namespace drover::allocrunner {
namespace {

model::Task T(const std::string& name, const std::string& hook = "", bool sidecar = false) {
  model::Task t;
  t.name = name;
  if (!hook.empty())
    t.lifecycle = model::Lifecycle{hook, sidecar};
  return t;
}

model::TaskState S(const char* state, bool failed = false) {
  model::TaskState s;
  s.state = state;
  s.failed = failed;
  return s;
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void Make(std::vector<model::Task> tasks) {
    c_ = std::make_unique<LifecycleCoordinator>(io_.get_executor(), tasks);
    for (const auto& t : tasks)
      states_[t.name] = S("pending");
    c_->TaskStateUpdated(states_);
  }
  void Set(const std::string& name, const char* state, bool failed = false) {
    states_[name] = S(state, failed);
    c_->TaskStateUpdated(states_);
  }
  asio::io_context io_;
  std::unique_ptr<LifecycleCoordinator> c_;
  std::map<std::string, model::TaskState> states_;
};

TEST_F(CoordinatorTest, OnlyMainTasksStartAtOnce) {
  Make({T("web"), T("db")});
  EXPECT_TRUE(c_->IsOpen("web"));
  EXPECT_TRUE(c_->IsOpen("db"));
}

TEST_F(CoordinatorTest, PrestartEphemeralRunsBeforeMain) {
  Make({T("init", "prestart"), T("web")});
  EXPECT_TRUE(c_->IsOpen("init"));
  EXPECT_FALSE(c_->IsOpen("web"));
  Set("init", "running");
  EXPECT_FALSE(c_->IsOpen("web"));
  Set("init", "dead");
  EXPECT_TRUE(c_->IsOpen("web"));
  EXPECT_FALSE(c_->IsOpen("init"));  // ephemeral prestart does not run again
}

TEST_F(CoordinatorTest, FailedPrestartKeepsMainBlocked) {
  Make({T("init", "prestart"), T("web")});
  Set("init", "dead", /*failed=*/true);
  EXPECT_FALSE(c_->IsOpen("web"));
}

TEST_F(CoordinatorTest, MainWaitsForPrestartSidecarToRun) {
  Make({T("proxy", "prestart", true), T("web")});
  EXPECT_FALSE(c_->IsOpen("web"));
  Set("proxy", "running");
  EXPECT_TRUE(c_->IsOpen("web"));
  EXPECT_TRUE(c_->IsOpen("proxy"));  // sidecars may restart
}

TEST_F(CoordinatorTest, PoststartAfterMainAndPoststopAfterEverything) {
  Make({T("web"), T("announce", "poststart"), T("cleanup", "poststop")});
  EXPECT_TRUE(c_->IsOpen("web"));
  EXPECT_FALSE(c_->IsOpen("announce"));
  EXPECT_FALSE(c_->IsOpen("cleanup"));
  Set("web", "running");
  EXPECT_TRUE(c_->IsOpen("announce"));
  EXPECT_FALSE(c_->IsOpen("cleanup"));
  Set("announce", "dead");
  EXPECT_EQ(c_->state(), CoordinatorState::kWaitAlloc);
  EXPECT_FALSE(c_->IsOpen("announce"));
  Set("web", "dead");
  EXPECT_EQ(c_->state(), CoordinatorState::kPoststop);
  EXPECT_TRUE(c_->IsOpen("cleanup"));
  EXPECT_FALSE(c_->IsOpen("web"));
}

TEST_F(CoordinatorTest, RestoreSkipsInitAndRestartGoesBackToInit) {
  auto tasks =
      std::vector<model::Task>{T("init", "prestart"), T("side", "prestart", true), T("web")};
  c_ = std::make_unique<LifecycleCoordinator>(io_.get_executor(), tasks);
  states_ = {{"init", S("dead")}, {"side", S("running")}, {"web", S("running")}};
  c_->Restore(states_);
  EXPECT_FALSE(c_->IsOpen("init"));
  EXPECT_TRUE(c_->IsOpen("side"));
  EXPECT_TRUE(c_->IsOpen("web"));
  c_->Restart();
  EXPECT_EQ(c_->state(), CoordinatorState::kInit);
  EXPECT_FALSE(c_->IsOpen("web"));
}

TEST_F(CoordinatorTest, WaitStartCompletesWhenGateOpens) {
  Make({T("init", "prestart"), T("web")});
  bool started = false;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await c_->WaitStart("web");
        started = true;
      },
      asio::detached);
  io_.poll();
  EXPECT_FALSE(started);
  Set("init", "dead");
  io_.restart();
  io_.poll();
  EXPECT_TRUE(started);
}

}  // namespace
}  // namespace drover::allocrunner
