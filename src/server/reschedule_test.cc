#include "server/reschedule.h"

#include <gtest/gtest.h>

namespace drover::server {
namespace {

using namespace std::chrono_literals;  // NOLINT

constexpr common::Time kFail = common::Time(1'000'000s);

model::Allocation Failed(std::vector<common::Duration> past_delays = {}) {
  model::Allocation a;
  a.id = "a";
  a.node_id = "n1";
  a.client_status = "failed";
  a.task_states["t"].finished_at = kFail;
  if (!past_delays.empty()) {
    a.reschedule_tracker.emplace();
    // Each earlier replacement failed again soon after its delay.
    for (common::Duration d : past_delays) {
      a.reschedule_tracker->events.push_back(
          {.reschedule_time = common::ToUnixNanos(kFail - d), .prev_node_id = "n0", .delay = d});
    }
  }
  return a;
}

model::ReschedulePolicy Policy(const std::string& function, common::Duration delay,
                               common::Duration max_delay) {
  return model::ReschedulePolicy{
      .delay = delay, .delay_function = function, .max_delay = max_delay, .unlimited = true};
}

TEST(RescheduleTest, BatchDefaultsAllowOneAttemptPerDayAfterFiveSeconds) {
  const model::ReschedulePolicy p{
      .attempts = 1, .interval = 24h, .delay = 5s, .delay_function = "constant"};
  auto first = DecideReschedule(Failed(), p);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->at, kFail + 5s);
  EXPECT_EQ(first->delay, 5s);
  EXPECT_FALSE(DecideReschedule(Failed({5s}), p).has_value());  // the one attempt is spent
  // An attempt outside the interval no longer counts.
  model::Allocation old = Failed({5s});
  old.reschedule_tracker->events[0].reschedule_time = common::ToUnixNanos(kFail - 25h);
  EXPECT_TRUE(DecideReschedule(old, p).has_value());
}

TEST(RescheduleTest, NoAttemptsNoReschedule) {
  EXPECT_FALSE(DecideReschedule(Failed(), model::ReschedulePolicy{.attempts = 0}).has_value());
}

TEST(RescheduleTest, ExponentialDelaysDoubleUpToTheMaximum) {
  const auto p = Policy("exponential", 30s, 2min);
  EXPECT_EQ(DecideReschedule(Failed(), p)->delay, 30s);
  EXPECT_EQ(DecideReschedule(Failed({30s}), p)->delay, 60s);
  EXPECT_EQ(DecideReschedule(Failed({30s, 60s}), p)->delay, 120s);
  EXPECT_EQ(DecideReschedule(Failed({30s, 60s, 120s}), p)->delay, 120s);
}

TEST(RescheduleTest, FibonacciDelaysAddTheLastTwo) {
  const auto p = Policy("fibonacci", 10s, 1h);
  EXPECT_EQ(DecideReschedule(Failed(), p)->delay, 10s);
  EXPECT_EQ(DecideReschedule(Failed({10s}), p)->delay, 10s);
  EXPECT_EQ(DecideReschedule(Failed({10s, 10s}), p)->delay, 20s);
  EXPECT_EQ(DecideReschedule(Failed({10s, 10s, 20s}), p)->delay, 30s);
  EXPECT_EQ(DecideReschedule(Failed({10s, 10s, 20s, 30s}), p)->delay, 50s);
}

TEST(RescheduleTest, AnAllocationThatRanPastTheCeilingStartsOverAtTheBaseDelay) {
  const auto p = Policy("exponential", 30s, 2min);
  model::Allocation a = Failed({30s, 60s, 120s});
  a.reschedule_tracker->events.back().reschedule_time = common::ToUnixNanos(kFail - 1h);
  EXPECT_EQ(DecideReschedule(a, p)->delay, 30s);
  // Below the ceiling, a long run changes nothing.
  model::Allocation b = Failed({30s});
  b.reschedule_tracker->events.back().reschedule_time = common::ToUnixNanos(kFail - 1h);
  EXPECT_EQ(DecideReschedule(b, p)->delay, 60s);
}

TEST(RescheduleTest, AFibonacciSeriesStartsAgainAfterAReset) {
  const auto p = Policy("fibonacci", 10s, 30s);
  EXPECT_EQ(DecideReschedule(Failed({10s, 10s, 20s, 30s, 10s}), p)->delay, 10s);
  EXPECT_EQ(DecideReschedule(Failed({30s, 10s, 10s}), p)->delay, 20s);
}

TEST(RescheduleTest, TheNextTrackerKeepsWhatCountsAndAddsThisReplacement) {
  const model::ReschedulePolicy limited{
      .attempts = 3, .interval = 1h, .delay = 5s, .delay_function = "constant"};
  model::Allocation a = Failed({5s, 5s});
  a.reschedule_tracker->events[0].reschedule_time = common::ToUnixNanos(kFail - 2h);
  model::RescheduleTracker t = NextTracker(a, limited, kFail + 5s, 5s);
  ASSERT_EQ(t.events.size(), 2u);  // the one from 2h ago is out of the interval
  EXPECT_EQ(t.events.back().prev_alloc_id, "a");
  EXPECT_EQ(t.events.back().prev_node_id, "n1");
  EXPECT_EQ(t.events.back().delay, 5s);
  EXPECT_EQ(t.events.back().reschedule_time, common::ToUnixNanos(kFail + 5s));
  const auto unlimited = Policy("exponential", 1s, 1h);
  model::RescheduleTracker capped =
      NextTracker(Failed({1s, 2s, 4s, 8s, 16s, 32s}), unlimited, kFail, 64s);
  ASSERT_EQ(capped.events.size(), 5u);
  EXPECT_EQ(capped.events.front().delay, 4s);
  EXPECT_EQ(capped.events.back().delay, 64s);
}

}  // namespace
}  // namespace drover::server
