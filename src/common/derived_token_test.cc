#include "common/derived_token.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

TEST(DerivedTokenTest, OnlyTheSameSecretAndAllocMatch) {
  const std::string t = MigrateToken("secret-1", "alloc-1");
  EXPECT_EQ(t.size(), 64u);
  EXPECT_EQ(t, MigrateToken("secret-1", "alloc-1"));
  EXPECT_TRUE(ValidMigrateToken("secret-1", "alloc-1", t));
  EXPECT_FALSE(ValidMigrateToken("secret-2", "alloc-1", t));
  EXPECT_FALSE(ValidMigrateToken("secret-1", "alloc-2", t));
  EXPECT_FALSE(ValidMigrateToken("secret-1", "alloc-1", t.substr(1)));
  EXPECT_FALSE(ValidMigrateToken("secret-1", "alloc-1", ""));
  EXPECT_FALSE(ValidMigrateToken("", "alloc-1", MigrateToken("", "alloc-1")));
}

}  // namespace
}  // namespace drover::common
