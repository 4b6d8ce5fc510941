#include "common/clock.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::common {
namespace {

using namespace std::chrono_literals;                     // NOLINT(google-build-using-namespace)
using namespace asio::experimental::awaitable_operators;  // NOLINT

TEST(FakeClockTest, SleepCompletesOnlyWhenAdvancedPastDeadline) {
  asio::io_context io;
  FakeClock clock;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await clock.Sleep(10s);
        done = true;
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(clock.sleepers(), 1u);
  clock.Advance(9s);
  io.restart();
  io.poll();
  EXPECT_FALSE(done);
  clock.Advance(1s);
  io.restart();
  io.poll();
  EXPECT_TRUE(done);
  EXPECT_EQ(clock.sleepers(), 0u);
}

TEST(FakeClockTest, LosingSleepInRaceIsCancelledAndUnregistered) {
  asio::io_context io;
  FakeClock clock;
  std::optional<size_t> winner;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto r = co_await (clock.Sleep(1h) || clock.Sleep(1s));
        winner = r.index();
      },
      asio::detached);
  ASSERT_TRUE(testing::RunWithFakeClock(io, clock, [&] { return winner.has_value(); }));
  EXPECT_EQ(*winner, 1u);
  EXPECT_EQ(clock.sleepers(), 0u);
}

TEST(RealClockTest, SleepWaitsRoughlyTheDuration) {
  asio::io_context io;
  RealClock clock;
  const auto start = std::chrono::steady_clock::now();
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await clock.Sleep(5ms);
        done = true;
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(done);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 5ms);
}

}  // namespace
}  // namespace drover::common
