#include "common/event.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace drover::common {
namespace {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

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

TEST(EventTest, WaitersResumeInOrderAndNeverInline) {
  asio::io_context io;
  Event ev(io.get_executor());
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          co_await ev.Wait();
          order.push_back(i);
        },
        asio::detached);
  }
  io.poll();
  ev.Set();
  EXPECT_TRUE(order.empty());  // Set() resumes nobody inline
  io.restart();
  io.poll();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(EventTest, LosingSideOfOrIsCancelledAndLeavesTheEventUsable) {
  asio::io_context io;
  Event never(io.get_executor());
  Event first(io.get_executor());
  int index = -1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto r = co_await (never.Wait() || first.Wait());
        index = static_cast<int>(r.index());
      },
      asio::detached);
  io.poll();
  first.Set();
  io.restart();
  io.poll();
  EXPECT_EQ(index, 1);
  // The cancelled wait left `never`; a new one still works.
  bool woken = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await never.Wait();
        woken = true;
      },
      asio::detached);
  io.restart();
  io.poll();
  EXPECT_FALSE(woken);
  never.Set();
  io.restart();
  io.poll();
  EXPECT_TRUE(woken);
}

TEST(EventTest, PendingWaitKeepsRunBusyAndDestroyAborts) {
  asio::io_context io;
  auto ev = std::make_unique<Event>(io.get_executor());
  std::string outcome;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          co_await ev->Wait();
          outcome = "woken";
        } catch (const boost::system::system_error& e) {
          outcome = e.code() == asio::error::operation_aborted ? "aborted" : e.what();
        }
      },
      asio::detached);
  io.poll();
  // A waiter counts as work, as a pending timer wait does: the context did not stop
  // for lack of it.
  EXPECT_FALSE(io.stopped());
  ev.reset();
  io.restart();
  io.run();  // returns: the aborted waiter was the only work
  EXPECT_EQ(outcome, "aborted");
}

TEST(EventTest, DestroyedContextFreesACoroutineWaitingOnAnEventItOwns) {
  struct Sentinel {
    bool* destroyed;
    ~Sentinel() { *destroyed = true; }
  };
  bool destroyed = false;
  {
    asio::io_context io;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          Sentinel sentinel{&destroyed};
          Event own(co_await asio::this_coro::executor);
          co_await own.Wait();  // never set: only the context's end frees this frame
        },
        asio::detached);
    io.poll();
    EXPECT_FALSE(destroyed);
  }
  EXPECT_TRUE(destroyed);
}

// The race's loser waits between two other waiters (unlinked from the middle of the
// list); then both sides of a race are set in the same tick (the loser's cancellation
// comes after its completion was posted).
TEST(EventTest, RaceLosersLeaveOtherWaitersAlone) {
  for (bool same_tick : {false, true}) {
    SCOPED_TRACE(same_tick ? "both set in one tick" : "only the winner set");
    asio::io_context io;
    Event a(io.get_executor());
    Event b(io.get_executor());
    int index = -1;
    int plain = 0;
    auto wait_a = [&]() -> asio::awaitable<void> {
      co_await a.Wait();
      ++plain;
    };
    asio::co_spawn(io, wait_a(), asio::detached);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto r = co_await (a.Wait() || b.Wait());
          index = static_cast<int>(r.index());
        },
        asio::detached);
    asio::co_spawn(io, wait_a(), asio::detached);
    io.poll();
    b.Set();
    if (same_tick)
      a.Set();
    io.restart();
    io.poll();
    EXPECT_EQ(index, 1);
    EXPECT_EQ(plain, same_tick ? 2 : 0);
    a.Set();
    io.restart();
    io.poll();
    EXPECT_EQ(plain, 2);
  }
}

TEST(NotifierTest, NotifyWithoutWaiterIsKeptForTheNextWait) {
  asio::io_context io;
  Notifier n(io.get_executor());
  int wakes = 0;
  n.Notify();
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await n.Wait();
        ++wakes;
        co_await n.Wait();
        ++wakes;
      },
      asio::detached);
  io.run_one();
  io.poll();
  EXPECT_EQ(wakes, 1);
  n.Notify();
  io.restart();
  io.run();
  EXPECT_EQ(wakes, 2);
}

}  // namespace
}  // namespace drover::common
