// Test main for every drover test binary: quiet logging unless DROVER_TEST_LOG is set,
// and a SIGPIPE-proof process (tests talk to sockets and pipes of child processes).
#include <csignal>
#include <cstdlib>

#include <gtest/gtest.h>

#include "common/logging.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  const char* level = std::getenv("DROVER_TEST_LOG");
  drover::common::InitLogging(level != nullptr ? level : "off");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
