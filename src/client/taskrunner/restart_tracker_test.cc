#include "client/taskrunner/restart_tracker.h"

#include <gtest/gtest.h>

namespace drover::taskrunner {
namespace {

using namespace std::chrono_literals;  // NOLINT

model::RestartPolicy Policy(int attempts, const char* mode) {
  return model::RestartPolicy{.attempts = attempts, .interval = 5min, .delay = 10s, .mode = mode};
}

drivers::ExitResult Exit(int code) {
  return drivers::ExitResult{.exit_code = code};
}

class RestartTrackerTest : public ::testing::Test {
 protected:
  RestartTracker Make(const model::RestartPolicy& p, const std::string& type = "service",
                      model::Task task = {}) {
    return RestartTracker(p, type, task, clock_, [this] { return jitter_; });
  }
  common::FakeClock clock_;
  double jitter_ = 0.5;
};

TEST_F(RestartTrackerTest, ModeFailRestartsWithJitteredDelayThenStops) {
  auto rt = Make(Policy(3, "fail"));
  for (int i = 0; i < 3; ++i) {
    rt.SetExitResult(Exit(1));
    auto st = rt.GetState();
    EXPECT_EQ(st.decision, RestartDecision::kRestarting);
    EXPECT_EQ(st.delay, 10s + 1250ms);  // delay + 0.25 * delay * jitter
    EXPECT_EQ(st.reason, kReasonWithinPolicy);
  }
  rt.SetExitResult(Exit(1));
  auto st = rt.GetState();
  EXPECT_EQ(st.decision, RestartDecision::kNotRestarting);
  EXPECT_EQ(st.reason, "Exceeded allowed attempts 3 in interval 5m0s and mode is \"fail\"");
}

TEST_F(RestartTrackerTest, ModeDelayWaitsForTheWindowToEnd) {
  auto rt = Make(Policy(1, "delay"));
  rt.SetExitResult(Exit(1));
  EXPECT_EQ(rt.GetState().decision, RestartDecision::kRestarting);
  clock_.Advance(1min);
  rt.SetExitResult(Exit(1));
  auto st = rt.GetState();
  EXPECT_EQ(st.decision, RestartDecision::kRestarting);
  EXPECT_EQ(st.reason, kReasonDelay);
  EXPECT_EQ(st.delay, 4min);
  // A new window resets the count.
  clock_.Advance(5min);
  rt.SetExitResult(Exit(1));
  EXPECT_EQ(rt.GetState().reason, kReasonWithinPolicy);
}

TEST_F(RestartTrackerTest, BatchSuccessTerminatesServiceSuccessRestarts) {
  auto batch = Make(Policy(3, "fail"), "batch");
  batch.SetExitResult(Exit(0));
  EXPECT_EQ(batch.GetState().decision, RestartDecision::kTerminated);
  auto service = Make(Policy(3, "fail"), "service");
  service.SetExitResult(Exit(0));
  EXPECT_EQ(service.GetState().decision, RestartDecision::kRestarting);
}

TEST_F(RestartTrackerTest, ZeroAttempts) {
  auto service = Make(Policy(0, "fail"));
  service.SetExitResult(Exit(0));
  EXPECT_EQ(service.GetState().decision, RestartDecision::kNotRestarting);
  auto batch = Make(Policy(0, "fail"), "batch");
  batch.SetExitResult(Exit(0));
  EXPECT_EQ(batch.GetState().decision, RestartDecision::kTerminated);
  batch.SetExitResult(Exit(1));
  auto st = batch.GetState();
  EXPECT_EQ(st.decision, RestartDecision::kNotRestarting);
  EXPECT_EQ(st.reason, kReasonNoRestartsAllowed);
}

TEST_F(RestartTrackerTest, StartErrorsFollowRecoverability) {
  auto rt = Make(Policy(3, "fail"));
  rt.SetStartError(absl::InternalError("exec failed"));
  auto st = rt.GetState();
  EXPECT_EQ(st.decision, RestartDecision::kNotRestarting);
  EXPECT_EQ(st.reason, kReasonUnrecoverable);
  rt.SetStartError(drivers::RecoverableError("try later"));
  EXPECT_EQ(rt.GetState().decision, RestartDecision::kRestarting);
}

TEST_F(RestartTrackerTest, KilledAndUserRestart) {
  auto rt = Make(Policy(0, "fail"));
  rt.SetKilled();
  rt.SetExitResult(Exit(1));
  EXPECT_EQ(rt.GetState().decision, RestartDecision::kKilled);
  rt.SetRestartTriggered(false);
  auto st = rt.GetState();
  EXPECT_EQ(st.decision, RestartDecision::kRestarting);
  EXPECT_EQ(st.delay, 0s);
}

TEST_F(RestartTrackerTest, LifecycleTasksRestartOnSuccessOnlyAsSidecars) {
  model::Task prestart;
  prestart.lifecycle = model::Lifecycle{"prestart", false};
  EXPECT_FALSE(Make(Policy(3, "fail"), "service", prestart).restart_on_success());
  prestart.lifecycle->sidecar = true;
  EXPECT_TRUE(Make(Policy(3, "fail"), "service", prestart).restart_on_success());
  model::Task poststop;
  poststop.lifecycle = model::Lifecycle{"poststop", true};
  EXPECT_FALSE(Make(Policy(3, "fail"), "service", poststop).restart_on_success());
}

}  // namespace
}  // namespace drover::taskrunner
