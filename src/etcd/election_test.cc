// Leadership against a real etcd: one leader at a time, the next one once it resigns
// or its lease expires, and writes fenced by the term.
#include "etcd/election.h"

#include <gtest/gtest.h>

#include "testing/await.h"
#include "testing/etcd_process.h"
#include "testing/test_util.h"

namespace drover::etcd {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

class ElectionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.ok()) << etcd_.Log(); }

  template <typename T>
  T Run(asio::awaitable<T> work) {
    return drover::testing::Await(io_, std::move(work));
  }
  // A write fenced by `term`: whether it was made.
  bool FencedWrite(const Term& term, const std::string& value) {
    auto txn = Run(client_a_.Txn({Fence("/drover/leader", term)}, {Op::Put("/drover/x", value)}));
    EXPECT_TRUE(txn.ok()) << txn.status();
    return txn.ok() && txn->succeeded;
  }

  drover::testing::EtcdProcess etcd_;
  asio::io_context io_;
  common::RealClock clock_;
  Client client_a_{{etcd_.endpoint()}};
  Client client_b_{{etcd_.endpoint()}};
  Election a_{client_a_, clock_, "/drover/leader", "server-a", 2};
  Election b_{client_b_, clock_, "/drover/leader", "server-b", 2};
};

TEST_F(ElectionTest, OneLeaderAtATimeAndTheNextOnceItResigns) {
  auto a_term = Run(a_.Campaign());
  ASSERT_TRUE(a_term.ok()) << a_term.status();
  EXPECT_EQ(*Run(a_.Leader()), "server-a");
  // b waits while a leads.
  std::optional<absl::StatusOr<Term>> b_term;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { b_term.emplace(co_await b_.Campaign()); },
      asio::detached);
  EXPECT_FALSE(drover::testing::RunUntil(
      io_, [&] { return b_term.has_value(); }, 500ms));
  EXPECT_TRUE(FencedWrite(*a_term, "from a"));

  ASSERT_TRUE(Run(a_.Resign(*a_term)).ok());
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return b_term.has_value(); }, 10s));
  ASSERT_TRUE(b_term->ok()) << b_term->status();
  EXPECT_EQ(*Run(b_.Leader()), "server-b");
  EXPECT_NE((*b_term)->revision, a_term->revision);
  // The deposed leader's writes fail; the new one's go through.
  EXPECT_FALSE(FencedWrite(*a_term, "stale a"));
  EXPECT_TRUE(FencedWrite(**b_term, "from b"));
  EXPECT_TRUE(Run(a_.Resign(*a_term)).ok());  // twice is fine
}

TEST_F(ElectionTest, ALeaderThatStopsRefreshingLosesToTheNextWithinItsTtl) {
  auto a_term = Run(a_.Campaign());
  ASSERT_TRUE(a_term.ok()) << a_term.status();
  // a holds for a while: its lease outlives the TTL.
  std::optional<absl::Status> a_lost;
  auto hold = [&]() -> asio::awaitable<void> { a_lost.emplace(co_await a_.Hold(*a_term)); };
  asio::co_spawn(io_, hold, asio::detached);
  EXPECT_FALSE(drover::testing::RunUntil(
      io_, [&] { return a_lost.has_value(); }, 3s));
  EXPECT_EQ(*Run(a_.Leader()), "server-a");
  // Then its refreshes stop (a paused server): b leads once the lease expires.
  io_.stop();
  io_.restart();
  asio::io_context other;
  std::optional<absl::StatusOr<Term>> b_term;
  const common::Time stopped = clock_.Now();
  asio::co_spawn(
      other, [&]() -> asio::awaitable<void> { b_term.emplace(co_await b_.Campaign()); },
      asio::detached);
  ASSERT_TRUE(drover::testing::RunUntil(
      other, [&] { return b_term.has_value(); }, 15s));
  ASSERT_TRUE(b_term->ok()) << b_term->status();
  EXPECT_LT(clock_.Now() - stopped, 2s + 3s);  // the TTL, and etcd's expiry check
  // a hears of it at its next refresh, and its writes were fenced meanwhile.
  EXPECT_FALSE(FencedWrite(*a_term, "stale a"));
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return a_lost.has_value(); }, 10s));
  EXPECT_TRUE(absl::IsAborted(*a_lost)) << *a_lost;
}

}  // namespace
}  // namespace drover::etcd
