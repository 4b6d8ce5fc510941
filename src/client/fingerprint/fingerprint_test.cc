#include "client/fingerprint/fingerprint.h"

#include <gtest/gtest.h>

#include "common/ids.h"
#include "testing/test_util.h"

namespace drover::fingerprint {
namespace {

TEST(FingerprintTest, DescribesThisMachineAndKeepsIdentity) {
  testing::TempDir dir;
  FingerprintConfig c;
  c.data_dir = dir.path();
  c.dev_mode = true;
  c.node_name = "n1";
  c.http_addr = "127.0.0.1:4646";
  auto n = FingerprintNode(c, {});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(common::IsUuid(n->id));
  EXPECT_TRUE(common::IsUuid(n->secret_id));
  EXPECT_EQ(n->name, "n1");
  EXPECT_EQ(n->attributes.at("kernel.name"), "linux");
  EXPECT_FALSE(n->attributes.at("unique.hostname").empty());
  EXPECT_GT(n->node_resources.cpu_shares, 0);
  EXPECT_GT(n->node_resources.memory_mb, 0);
  EXPECT_EQ(n->node_resources.networks.at(0).ip, "127.0.0.1");
  auto again = FingerprintNode(c, {});
  EXPECT_EQ(again->id, n->id);
  EXPECT_EQ(again->secret_id, n->secret_id);
}

}  // namespace
}  // namespace drover::fingerprint
