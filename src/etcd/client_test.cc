// The etcd client against a real etcd (testing/etcd_process.h).
#include "etcd/client.h"

#include <gtest/gtest.h>

#include "testing/await.h"
#include "testing/etcd_process.h"
#include "testing/test_util.h"

namespace drover::etcd {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(etcd_.ok()) << etcd_.Log(); }

  template <typename T>
  T Run(asio::awaitable<T> work) {
    return drover::testing::Await(io_, std::move(work));
  }

  drover::testing::EtcdProcess etcd_;
  asio::io_context io_;
  Client client_{{"http://" + etcd_.endpoint()}};
};

TEST_F(EtcdClientTest, KeysAndValuesAreBytesAndPrefixesAreRanges) {
  const std::string binary_value("\0\xff\x01value", 8);
  auto r1 = Run(client_.Put("app/a", binary_value));
  ASSERT_TRUE(r1.ok()) << r1.status();
  auto r2 = Run(client_.Put("app/b", "2"));
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_GT(*r2, *r1);
  ASSERT_TRUE(Run(client_.Put("apq", "outside")).ok());

  auto got = Run(client_.Range({.key = "app/", .range_end = PrefixEnd("app/")}));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs.size(), 2u);
  EXPECT_EQ(got->kvs[0].key, "app/a");
  EXPECT_EQ(got->kvs[0].value, binary_value);
  EXPECT_EQ(got->kvs[0].mod_revision, *r1);
  EXPECT_EQ(got->kvs[1].version, 1);
  EXPECT_EQ(got->count, 2);
  EXPECT_GE(got->revision, *r2);

  auto limited = Run(client_.Range({.key = "app/", .range_end = PrefixEnd("app/"), .limit = 1}));
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->kvs.size(), 1u);
  EXPECT_TRUE(limited->more);
  // An earlier revision still has the earlier state.
  auto before = Run(client_.Range({.key = "app/b", .revision = *r1}));
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->kvs.empty());

  auto deleted = Run(client_.Delete("app/", PrefixEnd("app/")));
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2);
  auto none = Run(client_.Range({.key = "app/", .range_end = PrefixEnd("app/")}));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->kvs.empty());
}

TEST_F(EtcdClientTest, ATransactionComparesAndWritesAtomically) {
  // Create only if absent: the second attempt finds the key and reads it instead.
  const Compare absent{.key = "leader", .target = Compare::Target::kCreateRevision, .number = 0};
  auto first = Run(client_.Txn({absent}, {Op::Put("leader", "s1")}));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->succeeded);
  auto second = Run(client_.Txn({absent}, {Op::Put("leader", "s2")}, {Op::Get("leader")}));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->succeeded);
  ASSERT_EQ(second->ranges.size(), 1u);
  ASSERT_EQ(second->ranges[0].kvs.size(), 1u);
  EXPECT_EQ(second->ranges[0].kvs[0].value, "s1");

  // A write fenced by the revision it read: a stale one changes nothing.
  const int64_t rev = second->ranges[0].kvs[0].mod_revision;
  const Compare fenced{.key = "leader", .target = Compare::Target::kModRevision, .number = rev};
  auto cas = Run(client_.Txn({fenced}, {Op::Put("state", "a"), Op::Put("leader", "s1")}));
  ASSERT_TRUE(cas.ok());
  EXPECT_TRUE(cas->succeeded);
  auto stale = Run(client_.Txn({fenced}, {Op::Put("state", "b")}));
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded);
  auto state = Run(client_.Range({.key = "state"}));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->kvs.at(0).value, "a");
  const Compare by_value{.key = "state", .target = Compare::Target::kValue, .value = "a"};
  auto on_value = Run(client_.Txn({by_value}, {Op::Delete("state")}));
  ASSERT_TRUE(on_value.ok());
  EXPECT_TRUE(on_value->succeeded);
}

TEST_F(EtcdClientTest, ALeaseKeepsItsKeysUntilRevoked) {
  auto lease = Run(client_.GrantLease(30));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->ttl_seconds, 30);
  ASSERT_TRUE(Run(client_.Put("session", "me", lease->id)).ok());
  auto ttl = Run(client_.KeepAlive(lease->id));
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(*ttl, 30);
  auto held = Run(client_.Range({.key = "session"}));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->kvs.at(0).lease, lease->id);
  ASSERT_TRUE(Run(client_.RevokeLease(lease->id)).ok());
  auto gone = Run(client_.Range({.key = "session"}));
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->kvs.empty());
  EXPECT_TRUE(absl::IsNotFound(Run(client_.KeepAlive(lease->id)).status()));
  EXPECT_TRUE(absl::IsNotFound(Run(client_.RevokeLease(lease->id))));
}

TEST_F(EtcdClientTest, AWatchSeesEveryChangeInOrderAndACompactedStartIsOutOfRange) {
  auto start = Run(client_.Put("jobs/a", "1"));
  ASSERT_TRUE(start.ok());
  auto watch = Run(client_.WatchRange("jobs/", PrefixEnd("jobs/"), *start));
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(Run(client_.Put("jobs/b", "2")).ok());
  ASSERT_TRUE(Run(client_.Delete("jobs/a")).ok());
  ASSERT_TRUE(Run(client_.Put("other", "x")).ok());
  std::vector<std::string> seen;
  while (seen.size() < 3) {
    auto next = Run((*watch)->Next());
    ASSERT_TRUE(next.ok()) << next.status();
    for (const WatchEvent& e : next->events) {
      seen.push_back((e.type == WatchEvent::Type::kPut ? "put " : "delete ") + e.kv.key +
                     (e.type == WatchEvent::Type::kPut ? "=" + e.kv.value : ""));
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"put jobs/a=1", "put jobs/b=2", "delete jobs/a"}));

  auto now = Run(client_.Put("jobs/c", "3"));
  ASSERT_TRUE(now.ok());
  ASSERT_TRUE(Run(client_.Compact(*now)).ok());
  absl::Status compacted;
  auto late = Run(client_.WatchRange("jobs/", PrefixEnd("jobs/"), *start));
  if (late.ok())
    compacted = Run((*late)->Next()).status();
  else
    compacted = late.status();
  EXPECT_TRUE(absl::IsOutOfRange(compacted)) << compacted;
  EXPECT_TRUE(
      absl::IsOutOfRange(Run(client_.Range({.key = "jobs/a", .revision = *start})).status()));
}

TEST_F(EtcdClientTest, ReadsFailOverAndWritesAreNotSentTwice) {
  Client client({"127.0.0.1:1", etcd_.endpoint()}, ClientOptions{.call_timeout = 2s});
  ASSERT_TRUE(Run(client.Range({.key = "k"})).ok());
  EXPECT_EQ(client.current_endpoint(), etcd_.endpoint());
  // A write that fails is the caller's to retry (it may have been applied); the next
  // call goes to the next endpoint.
  Client writer({"127.0.0.1:1", etcd_.endpoint()}, ClientOptions{.call_timeout = 2s});
  absl::Status first = Run(writer.Put("k", "v")).status();
  EXPECT_TRUE(absl::IsUnavailable(first)) << first;
  EXPECT_NE(first.message().find("127.0.0.1:1"), std::string::npos) << first;
  ASSERT_TRUE(Run(writer.Put("k", "v")).ok());
  Client nowhere({"127.0.0.1:1"}, ClientOptions{.call_timeout = 2s});
  absl::Status s = Run(nowhere.Put("k", "v")).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("127.0.0.1:1"), std::string::npos) << s;
}

}  // namespace
}  // namespace drover::etcd
