#include "drivers/driver.h"

#include <csignal>

#include <gtest/gtest.h>

namespace drover::drivers {
namespace {

TEST(SignalTest, ParsesNamesAndNumbers) {
  EXPECT_EQ(*ParseSignal("SIGTERM"), SIGTERM);
  EXPECT_EQ(*ParseSignal("term"), SIGTERM);
  EXPECT_EQ(*ParseSignal("9"), SIGKILL);
  EXPECT_EQ(*ParseSignal("SIGHUP"), SIGHUP);
  EXPECT_FALSE(ParseSignal("SIGNOPE").ok());
  EXPECT_FALSE(ParseSignal("").ok());
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
}

TEST(RecoverableErrorTest, MarksStatus) {
  EXPECT_TRUE(IsRecoverable(RecoverableError("try again")));
  EXPECT_FALSE(IsRecoverable(absl::InternalError("no")));
  EXPECT_FALSE(IsRecoverable(absl::OkStatus()));
}

}  // namespace
}  // namespace drover::drivers
