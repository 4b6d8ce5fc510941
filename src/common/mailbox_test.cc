#include "common/mailbox.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(MailboxTest, HoldsOneValueAndNewerReplacesOlder) {
  asio::io_context io;
  Mailbox<int> m(io.get_executor(), [](const int& pending, const int& in) { return pending > in; });
  EXPECT_TRUE(m.Put(1));
  EXPECT_TRUE(m.Put(3));
  EXPECT_FALSE(m.Put(2));  // the pending 3 is newer
  std::vector<int> got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        while (auto v = co_await m.Take())
          got.push_back(*v);
      },
      asio::detached);
  io.poll();
  EXPECT_EQ(got, std::vector<int>({3}));
  m.Close();
  EXPECT_FALSE(m.Put(9));
  io.restart();
  io.poll();
  EXPECT_EQ(got, std::vector<int>({3}));
}

}  // namespace
}  // namespace drover::common
