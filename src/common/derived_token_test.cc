#include "common/derived_token.h"

#include <gtest/gtest.h>

namespace drover::common {
namespace {

// Tokens cross agents of different builds (a migration's source and destination):
// the value is HMAC-SHA256 exactly (Python: hmac.new(b"node-secret",
// b"drover-migrate\nalloc-1", hashlib.sha256).hexdigest()).
TEST(DerivedTokenTest, IsHmacSha256OfThePurposeAndAlloc) {
  EXPECT_EQ(MigrateToken("node-secret", "alloc-1"),
            "6a1c4d73f8ec9ed77d775b3df0dc3a2b8b125e6e41281db1fe5e6afc0dcfe0d7");
}

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
