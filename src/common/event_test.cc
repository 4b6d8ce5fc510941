#include "common/event.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(EventTest, AllWaitersWakeAndLaterWaitsReturnImmediately) {
  asio::io_context io;
  Event ev(io.get_executor());
  int woken = 0;
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await ev.Wait();
          ++woken;
        },
        asio::detached);
  }
  io.poll();
  EXPECT_EQ(woken, 0);
  ev.Set();
  io.restart();
  io.poll();
  EXPECT_EQ(woken, 3);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await ev.Wait();
        ++woken;
      },
      asio::detached);
  io.restart();
  io.poll();
  EXPECT_EQ(woken, 4);
}

TEST(NotifierTest, NotificationsCoalesce) {
  asio::io_context io;
  Notifier n(io.get_executor());
  n.Notify();
  n.Notify();
  int wakes = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (;;) {
          co_await n.Wait();
          ++wakes;
        }
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(wakes, 1);
  EXPECT_FALSE(n.pending());
  n.Notify();
  io.restart();
  io.poll();
  EXPECT_EQ(wakes, 2);
  io.stop();
}

}  // namespace
}  // namespace drover::common
