#include "common/offload.h"

#include <thread>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::common {
namespace {

TEST(OffloadTest, RunsOnPoolAndResumesOnLoopThread) {
  asio::io_context io;
  asio::thread_pool pool(1);
  std::thread::id loop_thread = std::this_thread::get_id();
  std::thread::id work_thread, resumed_thread;
  int result = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        result = co_await Offload(pool, [&] {
          work_thread = std::this_thread::get_id();
          return 42;
        });
        resumed_thread = std::this_thread::get_id();
      },
      asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return result == 42; }));
  EXPECT_NE(work_thread, loop_thread);
  EXPECT_EQ(resumed_thread, loop_thread);
  pool.join();
}

TEST(OffloadTest, ExceptionsPropagateToCaller) {
  asio::io_context io;
  asio::thread_pool pool(1);
  bool caught = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          co_await Offload(pool, []() -> int { throw std::runtime_error("boom"); });
        } catch (const std::runtime_error&) {
          caught = true;
        }
      },
      asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return caught; }));
  pool.join();
}

}  // namespace
}  // namespace drover::common
