#include "common/percent_encode.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(PercentEncodeTest, OnlyUnreservedBytesStayAsTheyAre) {
  EXPECT_EQ(PercentEncode("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(PercentEncode("127.0.0.1:5000/team/web:1.2"), "127.0.0.1%3A5000%2Fteam%2Fweb%3A1.2");
  EXPECT_EQ(PercentEncode("a b+c&d=e?f#g%"), "a%20b%2Bc%26d%3De%3Ff%23g%25");
  EXPECT_EQ(PercentEncode(std::string_view("\0\xff\xe9", 3)), "%00%FF%E9");
  EXPECT_EQ(PercentEncode(""), "");
}

}  // namespace
}  // namespace drover::common
