#include "client/allocrunner/health_tracker.h"

#include <gtest/gtest.h>

namespace drover::allocrunner {
namespace {

using std::chrono::seconds;

const common::Time kT0 = common::Time{} + std::chrono::hours(1000);

model::Task NamedTask(const std::string& name, const char* hook = nullptr, bool sidecar = false) {
  model::Task t;
  t.name = name;
  if (hook != nullptr)
    t.lifecycle = model::Lifecycle{.hook = hook, .sidecar = sidecar};
  return t;
}

model::TaskState State(const char* state, uint64_t restarts = 0) {
  model::TaskState s;
  s.state = state;
  s.restarts = restarts;
  return s;
}

class HealthTrackerTest : public ::testing::Test {
 protected:
  HealthTrackerTest() {
    group_.name = "web";
    group_.tasks = {NamedTask("init", model::kLifecyclePrestart), NamedTask("main"),
                    NamedTask("proxy", model::kLifecyclePrestart, true),
                    NamedTask("cleanup", model::kLifecyclePoststop)};
  }
  model::TaskGroup group_;
  model::MigrateStrategy strategy_{1, "task_states", seconds(10), seconds(60)};
};

TEST_F(HealthTrackerTest, HealthyAfterMinHealthyTimeOfEverythingUp) {
  HealthTracker h(group_, strategy_, kT0);
  std::map<std::string, model::TaskState> states{{"init", State(model::kTaskStateRunning)},
                                                 {"main", State(model::kTaskStatePending)},
                                                 {"proxy", State(model::kTaskStateRunning)}};
  EXPECT_EQ(h.Observe(states, kT0), std::nullopt);
  EXPECT_EQ(h.NextCheck(), kT0 + seconds(60));
  // The prestart task finished; the poststop task never ran and does not count.
  states["init"] = State(model::kTaskStateDead);
  states["main"] = State(model::kTaskStateRunning);
  EXPECT_EQ(h.Observe(states, kT0 + seconds(2)), std::nullopt);
  EXPECT_EQ(h.NextCheck(), kT0 + seconds(12));
  EXPECT_EQ(h.Observe(states, kT0 + seconds(11)), std::nullopt);
  EXPECT_EQ(h.Observe(states, kT0 + seconds(12)), true);
  // Final.
  states["main"].failed = true;
  EXPECT_EQ(h.Observe(states, kT0 + seconds(13)), true);
}

TEST_F(HealthTrackerTest, ARestartStartsTheHealthyTimeAgain) {
  HealthTracker h(group_, strategy_, kT0);
  std::map<std::string, model::TaskState> states{{"init", State(model::kTaskStateDead)},
                                                 {"main", State(model::kTaskStateRunning)},
                                                 {"proxy", State(model::kTaskStateRunning)}};
  EXPECT_EQ(h.Observe(states, kT0), std::nullopt);
  states["main"] = State(model::kTaskStateRunning, 1);
  EXPECT_EQ(h.Observe(states, kT0 + seconds(9)), std::nullopt);
  EXPECT_EQ(h.NextCheck(), kT0 + seconds(19));
  EXPECT_EQ(h.Observe(states, kT0 + seconds(12)), std::nullopt);
  states["proxy"] = State(model::kTaskStatePending);
  EXPECT_EQ(h.Observe(states, kT0 + seconds(19)), std::nullopt);
  EXPECT_EQ(h.NextCheck(), kT0 + seconds(60));
}

TEST_F(HealthTrackerTest, AFailedTaskIsUnhealthyAtOnce) {
  HealthTracker h(group_, strategy_, kT0);
  model::TaskState failed = State(model::kTaskStateDead);
  failed.failed = true;
  EXPECT_EQ(h.Observe({{"init", failed}}, kT0 + seconds(1)), false);
}

TEST_F(HealthTrackerTest, UnhealthyWhenTheDeadlinePassesFirst) {
  HealthTracker h(group_, strategy_, kT0);
  std::map<std::string, model::TaskState> states{{"main", State(model::kTaskStatePending)}};
  EXPECT_EQ(h.Observe(states, kT0 + seconds(59)), std::nullopt);
  EXPECT_EQ(h.Observe(states, kT0 + seconds(60)), false);
}

}  // namespace
}  // namespace drover::allocrunner
