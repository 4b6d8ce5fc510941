// What the HTTP handlers reach: the embedded server, the local client (either may be
// absent when the agent runs only one role), facts about the agent, and the blocking
// pool for encoding large responses.
#pragma once

#include <string>

#include "api/router.h"
#include "common/clock.h"

namespace drover::server {
class Server;
}
namespace drover::client {
class Client;
}

namespace drover::api {

struct AgentInfo {
  std::string name;
  std::string region = "global";
  std::string datacenter = "dc1";
  std::string bind_addr = "127.0.0.1";
  int http_port = 4646;
  std::string version;
  std::string data_dir;
  bool dev_mode = false;
};

struct ApiContext {
  server::Server* server = nullptr;
  client::Client* client = nullptr;
  AgentInfo info;
  asio::thread_pool* pool = nullptr;
  common::Clock* clock = nullptr;
};

// Registers every /v1 route. `ctx` must outlive the router.
void RegisterRoutes(Router& router, ApiContext& ctx);

// Per-resource registration (one file each).
void RegisterAgentRoutes(Router& router, ApiContext& ctx);
void RegisterJobRoutes(Router& router, ApiContext& ctx);
void RegisterJobspecRoutes(Router& router, ApiContext& ctx);
void RegisterAllocRoutes(Router& router, ApiContext& ctx);
void RegisterEvalRoutes(Router& router, ApiContext& ctx);
void RegisterNodeRoutes(Router& router, ApiContext& ctx);
void RegisterClientRoutes(Router& router, ApiContext& ctx);
void RegisterFsRoutes(Router& router, ApiContext& ctx);
void RegisterStatsRoutes(Router& router, ApiContext& ctx);

}  // namespace drover::api
