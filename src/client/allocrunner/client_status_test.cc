#include "client/allocrunner/client_status.h"

#include <gtest/gtest.h>

namespace drover::allocrunner {
namespace {

model::TaskState State(const char* s, bool failed = false) {
  model::TaskState t;
  t.state = s;
  t.failed = failed;
  return t;
}

TEST(ClientStatusTest, FirstMatchWins) {
  EXPECT_EQ(ComputeClientStatus({}).status, "");
  EXPECT_EQ(ComputeClientStatus({{"a", State("dead", true)}, {"b", State("running")}}).status,
            "failed");
  EXPECT_EQ(ComputeClientStatus({{"a", State("running")}, {"b", State("pending")}}).status,
            "running");
  EXPECT_EQ(ComputeClientStatus({{"a", State("pending")}, {"b", State("dead")}}).status, "pending");
  auto c = ComputeClientStatus({{"a", State("dead")}, {"b", State("dead")}});
  EXPECT_EQ(c.status, "complete");
  EXPECT_EQ(c.description, "All tasks have completed");
}

}  // namespace
}  // namespace drover::allocrunner
