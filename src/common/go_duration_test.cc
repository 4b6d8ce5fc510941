#include "common/go_duration.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

using namespace std::chrono_literals;  // NOLINT

TEST(ParseGoDurationTest, AcceptsGoSyntax) {
  EXPECT_EQ(*ParseGoDuration("300000ms"), 300s);
  EXPECT_EQ(*ParseGoDuration("1h30m"), 90min);
  EXPECT_EQ(*ParseGoDuration("2.5s"), 2500ms);
  EXPECT_EQ(*ParseGoDuration("0"), 0s);
  EXPECT_EQ(*ParseGoDuration("-1s"), -1s);
  EXPECT_EQ(*ParseGoDuration("10us"), 10us);
}

TEST(ParseGoDurationTest, RejectsGarbage) {
  EXPECT_FALSE(ParseGoDuration("").ok());
  EXPECT_FALSE(ParseGoDuration("10").ok());
  EXPECT_FALSE(ParseGoDuration("abc").ok());
  EXPECT_FALSE(ParseGoDuration("5x").ok());
  EXPECT_FALSE(ParseGoDuration("s").ok());
}

}  // namespace
}  // namespace drover::common
