#include "server/feasibility.h"

#include <gtest/gtest.h>

#include "server/test_fixtures.h"

namespace drover::server {
namespace {

TEST(FeasibilityTest, ResolvesTargets) {
  model::Node n = test::MakeNode("abc");
  n.meta["rack"] = "r1";
  EXPECT_EQ(*ResolveTarget("${attr.kernel.name}", n), "linux");
  EXPECT_EQ(*ResolveTarget("${node.unique.id}", n), "abc");
  EXPECT_EQ(*ResolveTarget("${node.datacenter}", n), "dc1");
  EXPECT_EQ(*ResolveTarget("${meta.rack}", n), "r1");
  EXPECT_EQ(*ResolveTarget("literal", n), "literal");
  EXPECT_FALSE(ResolveTarget("${attr.nope}", n).has_value());
}

TEST(FeasibilityTest, Operands) {
  model::Node n = test::MakeNode("abc");
  n.attributes["cpu.numcores"] = "8";
  n.attributes["kernel.version"] = "6.1.0";
  n.attributes["tags"] = "a,b,c";
  auto meets = [&](std::string l, std::string op, std::string r) {
    return MeetsConstraint(model::Constraint{l, r, op}, n);
  };
  EXPECT_TRUE(meets("${attr.kernel.name}", "=", "linux"));
  EXPECT_FALSE(meets("${attr.kernel.name}", "=", "windows"));
  EXPECT_TRUE(meets("${attr.kernel.name}", "!=", "windows"));
  EXPECT_TRUE(meets("${attr.cpu.numcores}", ">=", "4"));
  EXPECT_FALSE(meets("${attr.cpu.numcores}", "<", "4"));
  EXPECT_TRUE(meets("${attr.kernel.name}", "regexp", "^lin"));
  EXPECT_TRUE(meets("${attr.kernel.version}", "version", ">= 5.10, < 7"));
  EXPECT_FALSE(meets("${attr.kernel.version}", "version", "< 6"));
  EXPECT_TRUE(meets("${attr.tags}", "set_contains", "a,c"));
  EXPECT_FALSE(meets("${attr.tags}", "set_contains", "a,d"));
  EXPECT_TRUE(meets("${attr.tags}", "set_contains_any", "x,c"));
  EXPECT_TRUE(meets("${attr.kernel.name}", "is_set", ""));
  EXPECT_TRUE(meets("${attr.missing}", "is_not_set", ""));
  EXPECT_FALSE(meets("${attr.missing}", "=", "x"));
}

TEST(FeasibilityTest, DatacenterGlobs) {
  EXPECT_TRUE(DatacenterMatches({"*"}, "dc1"));
  EXPECT_TRUE(DatacenterMatches({"us-*"}, "us-east"));
  EXPECT_FALSE(DatacenterMatches({"dc2"}, "dc1"));
}

TEST(FeasibilityTest, VersionsCompareNumerically) {
  EXPECT_LT(CompareVersions("1.9", "1.10"), 0);
  EXPECT_EQ(CompareVersions("v1.2.0", "1.2"), 0);
  EXPECT_TRUE(VersionSatisfies("1.4.2", "~> 1.4"));
  EXPECT_FALSE(VersionSatisfies("2.0", "~> 1.4"));
}

}  // namespace
}  // namespace drover::server
