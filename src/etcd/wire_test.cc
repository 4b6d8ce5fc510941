// The gateway's JSON as etcd 3.4 writes it, and what is refused.
#include "etcd/wire.h"

#include <gtest/gtest.h>

namespace drover::etcd::wire {
namespace {

TEST(EtcdWireTest, PrefixEndIsTheFirstKeyAfterThePrefix) {
  EXPECT_EQ(PrefixEnd("a/"), "a0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixEnd(""), std::string(1, '\0'));
}

TEST(EtcdWireTest, AnswersDecodeWithDefaultsLeftOut) {
  auto range = DecodeRange(R"({"header":{"revision":"7"},"kvs":[{"key":"Zm9v","create_revision":"2",
    "mod_revision":"5","version":"3","value":"YmFy"}],"count":"1"})");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->revision, 7);
  EXPECT_EQ(range->kvs.at(0), (KeyValue{"foo", "bar", 2, 5, 3, 0}));
  auto empty = DecodeRange(R"({"header":{"revision":"1"}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->kvs.empty());
  auto txn = DecodeTxn(R"({"header":{"revision":"9"},"responses":[{"response_put":{}},
    {"response_range":{"header":{},"kvs":[{"key":"YQ=="}],"count":"1"}}]})");
  ASSERT_TRUE(txn.ok()) << txn.status();
  EXPECT_FALSE(txn->succeeded);
  ASSERT_EQ(txn->ranges.size(), 1u);
  EXPECT_EQ(txn->ranges[0].kvs[0].key, "a");
  auto event = DecodeWatchMessage(R"({"result":{"header":{"revision":"4"},
    "events":[{"kv":{"key":"YQ==","mod_revision":"3"}},{"type":"DELETE","kv":{"key":"Yg=="}}]}})");
  ASSERT_TRUE(event.ok()) << event.status();
  ASSERT_EQ(event->response.events.size(), 2u);
  EXPECT_EQ(event->response.events[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(event->response.events[1].type, WatchEvent::Type::kDelete);
  EXPECT_TRUE(absl::IsNotFound(DecodeKeepAlive(R"({"result":{"header":{},"ID":"5"}})").status()));
}

TEST(EtcdWireTest, MalformedAnswersAndErrorsAreStatuses) {
  for (const char* bad : {"", "[]", "not json", R"({"kvs":[{"key":"!!"}]})",
                          R"({"kvs":[{"key":"YQ==","version":"x"}]})", R"({"kvs":[5]})"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(DecodeRange(bad).status())) << bad;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(DecodeRevision("{}").status()));
  absl::Status compacted = DecodeError(
      400, R"({"error":"etcdserver: mvcc: required revision has been compacted","code":11,
      "message":"etcdserver: mvcc: required revision has been compacted"})");
  EXPECT_TRUE(absl::IsOutOfRange(compacted)) << compacted;
  EXPECT_TRUE(absl::IsUnknown(DecodeError(502, "<html>bad gateway</html>")));
  // Inside a stream the gateway says grpc_code.
  absl::Status in_stream = DecodeWatchMessage(
                               R"({"error":{"grpc_code":14,"http_code":503,
      "message":"transport is closing","http_status":"Service Unavailable"}})")
                               .status();
  EXPECT_TRUE(absl::IsUnavailable(in_stream)) << in_stream;
  auto canceled =
      DecodeWatchMessage(R"({"result":{"header":{},"compact_revision":"12","canceled":true}})");
  EXPECT_TRUE(absl::IsOutOfRange(canceled.status()));
  EXPECT_NE(canceled.status().message().find("12"), std::string::npos);
}

}  // namespace
}  // namespace drover::etcd::wire
