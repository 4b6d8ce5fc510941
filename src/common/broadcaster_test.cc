#include "common/broadcaster.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(BroadcasterTest, ListenerSeesOnlyLatestAndNewListenerIsPrimed) {
  asio::io_context io;
  Broadcaster<int> b(io.get_executor());
  auto early = b.Listen();
  b.Send(1);
  b.Send(2);
  b.Send(3);
  auto late = b.Listen();
  std::vector<int> early_seen, late_seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (auto v = co_await early->Next())
          early_seen.push_back(*v);
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (auto v = co_await late->Next())
          late_seen.push_back(*v);
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(early_seen, std::vector<int>({3}));
  EXPECT_EQ(late_seen, std::vector<int>({3}));
  b.Send(4);
  b.Close();
  io.restart();
  io.poll();
  EXPECT_EQ(early_seen, std::vector<int>({3, 4}));
  EXPECT_EQ(late_seen, std::vector<int>({3, 4}));
  EXPECT_TRUE(early->closed());
}

TEST(BroadcasterTest, StaleValuesAreDropped) {
  asio::io_context io;
  Broadcaster<int> b(io.get_executor(), [](const int& last, const int& v) { return v < last; });
  EXPECT_TRUE(b.Send(5));
  EXPECT_FALSE(b.Send(4));
  EXPECT_TRUE(b.Send(5));
  EXPECT_EQ(*b.last(), 5);
}

TEST(BroadcasterTest, ListenAfterCloseGetsLastValueThenEnds) {
  asio::io_context io;
  Broadcaster<int> b(io.get_executor());
  b.Send(7);
  b.Close();
  auto l = b.Listen();
  std::vector<int> seen;
  bool ended = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (auto v = co_await l->Next())
          seen.push_back(*v);
        ended = true;
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(seen, std::vector<int>({7}));
  EXPECT_TRUE(ended);
}

}  // namespace
}  // namespace drover::common
