#include "model/allocation.h"

#include <gtest/gtest.h>

namespace drover::model {
namespace {

TEST(AllocationTest, IndexFromName) {
  Allocation a;
  a.name = "example.cache[12]";
  EXPECT_EQ(a.Index(), 12);
  a.name = "weird";
  EXPECT_EQ(a.Index(), -1);
  a.name = "x.y[z]";
  EXPECT_EQ(a.Index(), -1);
}

TEST(AllocationTest, TerminalStatuses) {
  Allocation a;
  a.desired_status = kDesiredRun;
  a.client_status = kClientRunning;
  EXPECT_FALSE(a.Terminal());
  a.desired_status = kDesiredStop;
  EXPECT_TRUE(a.ServerTerminal());
  a.desired_status = kDesiredRun;
  a.client_status = kClientFailed;
  EXPECT_TRUE(a.ClientTerminal());
}

}  // namespace
}  // namespace drover::model
