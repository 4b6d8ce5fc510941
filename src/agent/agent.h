// The agent: composition of the HTTP API, the embedded server and the client on one
// control loop (DESIGN.md §1, §3). In -dev mode it is server and client at once.
#pragma once

#include <string>

namespace drover::agent {

struct AgentConfig {
  bool dev_mode = false;
  std::string bind_addr = "127.0.0.1";
  int http_port = 4646;  // 0 = pick a free port (written to <data_dir>/http.addr)
  // Empty in -dev: a fresh temp dir, removed on exit. Given, the server and client
  // state are kept there (docs/state.md): an agent that was killed, or (without -dev)
  // stopped, starts again where it was and re-attaches the tasks that kept running.
  // A -dev agent stops its tasks when it is stopped, as Nomad's does.
  std::string data_dir;
  // A state DB that is damaged is renamed to `<file>.corrupt-<unix time>` and an empty
  // one is started, instead of refusing to start.
  bool reset_corrupt_state = false;
  std::string node_name;  // default: the host name
  std::string region = "global";
  std::string datacenter = "dc1";
  std::string log_level = "info";
};

// Runs the agent until SIGINT or SIGTERM. Returns the process exit code; startup
// errors (port taken, unusable data dir) are printed and give exit code 1.
int RunAgent(const AgentConfig& config);

}  // namespace drover::agent
