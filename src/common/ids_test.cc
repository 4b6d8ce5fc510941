#include "common/ids.h"

#include <set>

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(IdsTest, UuidsAreWellFormedAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewUuid();
    ASSERT_TRUE(IsUuid(id)) << id;
    EXPECT_EQ(id[14], '4');
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(IsUuid("not-a-uuid"));
  EXPECT_EQ(RandomHex(8).size(), 8u);
}

}  // namespace
}  // namespace drover::common
