#include "common/async_mutex.h"

#include <vector>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace drover::common
