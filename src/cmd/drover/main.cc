// The `drover` binary: agent, Nomad-compatible HTTP API and CLI in one executable. All
// logic lives in the cli and agent libraries; this file only sets process-wide state.
#include <csignal>

#include "cli/cli.h"

int main(int argc, char** argv) {
  // A client whose peer closed the connection must get EPIPE, not die.
  std::signal(SIGPIPE, SIG_IGN);
  return drover::cli::Main(argc, argv);
}
