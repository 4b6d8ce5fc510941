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
