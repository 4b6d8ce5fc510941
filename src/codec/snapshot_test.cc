#include "codec/snapshot.h"

#include <gtest/gtest.h>

namespace drover::codec {
namespace {

using namespace std::string_literals;  // NOLINT(google-build-using-namespace)

TEST(SnapshotTest, RoundTripsBinaryRecords) {
  const std::vector<model::StateRecord> records = {
      {"jobs/default\0web\0"s + "00000000000000000001", "\x00\x01\xff"s}, {"meta/index", "{}"}};
  const std::string text =
      EncodeSnapshot({.region = "global", .schema_version = 1, .index = 42}, records);
  auto back = DecodeSnapshot(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->records, records);
  EXPECT_EQ(back->header.region, "global");
  EXPECT_EQ(back->header.index, 42u);
  EXPECT_EQ(back->header.records, 2u);
  EXPECT_EQ(DecodeSnapshotHeader(text)->index, 42u);
}

TEST(SnapshotTest, RefusesWhatIsNotAWholeSnapshot) {
  const std::string text = EncodeSnapshot({.region = "global", .schema_version = 1, .index = 1},
                                          {{"a", "1"}, {"b", "2"}});
  EXPECT_FALSE(DecodeSnapshot("").ok());
  EXPECT_FALSE(DecodeSnapshot("{\"Job\": {}}").ok());
  // Cut short, one record too many, a record that does not decode.
  auto cut = DecodeSnapshot(text.substr(0, text.rfind("{\"K\"")));
  EXPECT_NE(cut.status().message().find("ends after 1 of 2 records"), std::string::npos)
      << cut.status();
  EXPECT_FALSE(DecodeSnapshot(text + "{\"K\":\"Yw==\",\"V\":\"Mw==\"}\n").ok());
  EXPECT_FALSE(DecodeSnapshot(text.substr(0, text.size() - 5) + "!!\"}\n").ok());
  EXPECT_FALSE(DecodeSnapshotHeader("DROVER-SNAPSHOT 1\n{\"Region\": 3}\n").ok());
}

}  // namespace
}  // namespace drover::codec
