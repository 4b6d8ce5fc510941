#include "common/async_semaphore.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "common/async_mutex.h"
#include "testing/test_util.h"

namespace drover::common {
namespace {

TEST(AsyncMutexTest, HoldersTakeTurnsInOrder) {
  asio::io_context io;
  AsyncMutex mu(io.get_executor());
  Event gate(io.get_executor());
  std::vector<int> order;
  int done = 0;
  auto worker = [&](int id, bool wait_gate) -> asio::awaitable<void> {
    auto guard = co_await mu.Lock();
    order.push_back(id);
    if (wait_gate)
      co_await gate.Wait();
    order.push_back(-id);
    ++done;
  };
  asio::co_spawn(io, worker(1, true), asio::detached);
  asio::co_spawn(io, worker(2, false), asio::detached);
  asio::co_spawn(io, worker(3, false), asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return order.size() == 1; }));
  io.poll();
  EXPECT_EQ(order, std::vector<int>{1});  // 2 and 3 wait while 1 holds it
  gate.Set();
  ASSERT_TRUE(testing::RunUntil(io, [&] { return done == 3; }));
  EXPECT_EQ(order, (std::vector<int>{1, -1, 2, -2, 3, -3}));
  EXPECT_FALSE(mu.locked());
}

TEST(AsyncSemaphoreTest, AtMostItsPermitsAreHeldAndWaitersGoInOrder) {
  asio::io_context io;
  AsyncSemaphore sem(io.get_executor(), 2);
  Event gate(io.get_executor());
  std::vector<int> entered;
  int holding = 0, most = 0, done = 0;
  auto worker = [&](int id) -> asio::awaitable<void> {
    auto permit = co_await sem.Acquire();
    entered.push_back(id);
    most = std::max(most, ++holding);
    co_await gate.Wait();
    --holding;
    ++done;
  };
  for (int id = 1; id <= 5; ++id)
    asio::co_spawn(io, worker(id), asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return entered.size() == 2; }));
  io.poll();
  EXPECT_EQ(entered, (std::vector<int>{1, 2}));
  EXPECT_EQ(sem.available(), 0);
  EXPECT_EQ(sem.waiting(), 3u);
  gate.Set();
  ASSERT_TRUE(testing::RunUntil(io, [&] { return done == 5; }));
  EXPECT_EQ(entered, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(most, 2);
  EXPECT_EQ(sem.available(), 2);
}

// One permit, held by `first`; a second waiter that gives up when `give_up` is set
// (`second_gave_up` says whether that branch won); a third that waits plainly.
struct ThreeWaiters {
  ThreeWaiters() {
    using namespace asio::experimental::awaitable_operators;  // NOLINT
    asio::co_spawn(
        io, [this]() -> asio::awaitable<void> { first = co_await sem.Acquire(); }, asio::detached);
    EXPECT_TRUE(testing::RunUntil(io, [this] { return first.has_value(); }));
    asio::co_spawn(
        io,
        [this]() -> asio::awaitable<void> {
          auto acquire = sem.Acquire();
          auto r = co_await (std::move(acquire) || give_up.Wait());
          second_gave_up = r.index() == 1;
          second_done = true;  // a permit it won is dropped here, and so given back
        },
        asio::detached);
    asio::co_spawn(
        io,
        [this]() -> asio::awaitable<void> {
          auto permit = co_await sem.Acquire();
          third_got_it = true;
        },
        asio::detached);
    EXPECT_TRUE(testing::RunUntil(io, [this] { return sem.waiting() == 2; }));
  }

  asio::io_context io;
  AsyncSemaphore sem{io.get_executor(), 1};
  Event give_up{io.get_executor()};
  std::optional<AsyncSemaphore::Permit> first;
  bool second_gave_up = false, second_done = false, third_got_it = false;
};

TEST(AsyncSemaphoreTest, ACancelledWaiterLeavesTheQueueAndTakesNoPermit) {
  ThreeWaiters w;
  w.give_up.Set();
  ASSERT_TRUE(testing::RunUntil(w.io, [&] { return w.second_gave_up && w.sem.waiting() == 1; }));
  w.first->Release();
  ASSERT_TRUE(testing::RunUntil(w.io, [&] { return w.third_got_it; }));
  w.io.poll();
  EXPECT_EQ(w.sem.available(), 1);
}

TEST(AsyncSemaphoreTest, APermitHandedToAWaiterThatGivesUpIsPassedOn) {
  // The permit is handed over and the waiter's other branch completes in the same
  // step, in both orders: whichever branch wins, the third waiter gets the permit.
  for (const bool release_first : {true, false}) {
    ThreeWaiters w;
    if (release_first) {
      w.first->Release();
      w.give_up.Set();
    } else {
      w.give_up.Set();
      w.first->Release();
    }
    ASSERT_TRUE(testing::RunUntil(w.io, [&] { return w.second_done && w.third_got_it; }))
        << "release first: " << release_first;
    w.io.poll();
    EXPECT_EQ(w.sem.available(), 1);
    EXPECT_EQ(w.sem.waiting(), 0u);
  }
}

TEST(AsyncSemaphoreTest, APermitMayOutliveItsSemaphore) {
  asio::io_context io;
  AsyncSemaphore::Permit kept;
  {
    AsyncSemaphore sem(io.get_executor(), 1);
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { kept = co_await sem.Acquire(); }, asio::detached);
    ASSERT_TRUE(testing::RunUntil(io, [&] { return sem.available() == 0; }));
  }
  kept.Release();  // the semaphore is gone: nothing to give back to, and no crash
}

}  // namespace
}  // namespace drover::common
