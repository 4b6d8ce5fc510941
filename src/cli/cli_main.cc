// Main: Run wired to the real HTTP client, agent and environment. Kept apart from cli.cc
// so tests of Run link neither Beast nor the agent.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/http_client.h"

#include "agent/agent.h"

namespace drover::cli {

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.empty()) {
    args.emplace_back("drover");
  }
  Dependencies deps;
  deps.new_client = [](Address address, std::string token) {
    return NewHttpClient(std::move(address), std::move(token));
  };
  deps.run_agent = [](const agent::AgentConfig& config) { return agent::RunAgent(config); };
  deps.getenv = [](const std::string& name) -> std::string {
    const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): main thread
    return value == nullptr ? "" : value;
  };
  return Run(args, std::cin, std::cout, std::cerr, deps);
}

}  // namespace drover::cli
