// The `drover` command line: Nomad's command names, flags (single-dash long flags
// included), output layout and exit codes, as a thin HTTP client of the agent (plus
// `drover agent`, which runs the agent in-process).
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/http_client.h"
#include "cli/url.h"

#include "agent/agent.h"
#include "common/clock.h"

namespace drover::cli {

// Entry point of the binary (cli_main.cc): Run with the real dependencies and the
// process's streams. Returns the process exit code.
int Main(int argc, char** argv);

// What Run takes from the outside world; Main passes the real ones, tests fakes.
struct Dependencies {
  // Makes the API client for an address and ACL token (NewHttpClient).
  std::function<std::unique_ptr<HttpClient>(Address address, std::string token)> new_client;
  // Runs the agent until it is told to stop (agent::RunAgent).
  std::function<int(const agent::AgentConfig&)> run_agent;
  // The value of an environment variable, "" when unset.
  std::function<std::string(const std::string& name)> getenv;
  // The wall clock for relative times; null means the system clock.
  std::function<common::Time()> now;
};

// Parses `args` (`args[0]` is the program name) and runs the chosen command.
int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Dependencies& deps);

}  // namespace drover::cli
