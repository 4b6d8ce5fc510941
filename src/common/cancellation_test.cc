#include "common/cancellation.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "testing/test_util.h"

namespace drover::common {
namespace {

using namespace std::chrono_literals;                     // NOLINT
using namespace asio::experimental::awaitable_operators;  // NOLINT

TEST(CancellationScopeTest, ParentCancelsChildrenNotTheOtherWay) {
  asio::io_context io;
  auto parent = CancellationScope::Create(io.get_executor());
  auto a = parent->Child();
  auto b = parent->Child();
  a->Cancel();
  EXPECT_TRUE(a->cancelled());
  EXPECT_FALSE(parent->cancelled());
  EXPECT_FALSE(b->cancelled());
  parent->Cancel();
  EXPECT_TRUE(b->cancelled());
  EXPECT_TRUE(parent->Child()->cancelled());
}

TEST(CancellationScopeTest, AnAdoptedScopeIsCancelledByEitherParent) {
  asio::io_context io;
  auto stop = CancellationScope::Create(io.get_executor());
  auto shutdown = CancellationScope::Create(io.get_executor());
  auto by_stop = stop->Child();
  shutdown->Adopt(by_stop);
  auto by_shutdown = stop->Child();
  shutdown->Adopt(by_shutdown);
  shutdown->Cancel();
  EXPECT_TRUE(by_shutdown->cancelled());
  EXPECT_TRUE(by_stop->cancelled());
  EXPECT_FALSE(stop->cancelled());

  auto other = CancellationScope::Create(io.get_executor());
  auto late = other->Child();
  shutdown->Adopt(late);  // adopted by a parent already cancelled: cancelled at once
  EXPECT_TRUE(late->cancelled());

  auto fresh = CancellationScope::Create(io.get_executor());
  auto child = fresh->Child();
  stop->Adopt(child);
  stop->Cancel();
  EXPECT_TRUE(child->cancelled());
  EXPECT_FALSE(fresh->cancelled());
}

TEST(CancellationScopeTest, CancelInterruptsRacedSleep) {
  asio::io_context io;
  FakeClock clock;
  auto scope = CancellationScope::Create(io.get_executor());
  std::optional<size_t> which;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto r = co_await (clock.Sleep(1h) || scope->Wait());
        which = r.index();
      },
      asio::detached);
  io.poll();
  scope->Cancel();
  ASSERT_TRUE(testing::RunUntil(io, [&] { return which.has_value(); }));
  EXPECT_EQ(*which, 1u);
  EXPECT_EQ(clock.sleepers(), 0u);
}

}  // namespace
}  // namespace drover::common
