// What the HTTP handlers reach: the server and the local client through their API
// interfaces (either may be absent when the agent runs only one role), facts about the
// agent, and the blocking pool for encoding large responses.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "api/client_api.h"
#include "api/router.h"
#include "api/server_api.h"
#include "common/async_mutex.h"
#include "common/clock.h"
#include "common/offload.h"

namespace drover::metrics {
class Registry;
}  // namespace drover::metrics

namespace drover::api {

struct AgentInfo {
  std::string name;
  std::string region = "global";
  std::string datacenter = "dc1";
  std::string bind_addr = "127.0.0.1";
  int http_port = 4646;
  // A server's RPC address and port (as configured in -dev, which opens none).
  std::string rpc_addr = "127.0.0.1:4647";
  int rpc_port = 4647;
  // A client-only agent's servers (their RPC addresses); empty on a server.
  std::vector<std::string> servers;
  std::string version;
  std::string data_dir;
  bool dev_mode = false;
};

struct ApiContext {
  ServerApi* server = nullptr;
  ClientApi* client = nullptr;
  AgentInfo info;
  asio::thread_pool* pool = nullptr;
  common::Clock* clock = nullptr;
  // Held by the pool work of requests (OffloadRequestWork): one at a time, so however
  // many requests wait for the pool, a thread stays free for the scheduler. Optional.
  common::AsyncMutex* request_work = nullptr;
  // Snapshots being sent (fs_endpoints.cc caps them); on the control loop.
  std::shared_ptr<int> snapshots_open = std::make_shared<int>(0);
  // GET /v1/metrics (none without); ?format=prometheus only with prometheus_metrics.
  metrics::Registry* metrics = nullptr;
  bool prometheus_metrics = false;
};

// Runs a request's blocking work (file reads, large decodes and encodings) on the pool,
// one request's work at a time (ctx.request_work). Pass a named callable (see Offload).
template <typename Fn>
asio::awaitable<std::invoke_result_t<Fn>> OffloadRequestWork(ApiContext& ctx, Fn fn) {
  common::AsyncMutex::Guard turn;
  if (ctx.request_work != nullptr)
    turn = co_await ctx.request_work->Lock();
  co_return co_await common::Offload(*ctx.pool, std::move(fn));
}

// Registers the /v1 routes the agent's roles can answer: the server's only with
// ctx.server. `ctx` must outlive the router.
void RegisterRoutes(Router& router, ApiContext& ctx);

// Per-resource registration (one file each).
void RegisterAgentRoutes(Router& router, ApiContext& ctx);
void RegisterJobRoutes(Router& router, ApiContext& ctx);
void RegisterJobVersionRoutes(Router& router, ApiContext& ctx);
void RegisterScalingRoutes(Router& router, ApiContext& ctx);
void RegisterPeriodicRoutes(Router& router, ApiContext& ctx);
void RegisterEventRoutes(Router& router, ApiContext& ctx);
void RegisterSearchRoutes(Router& router, ApiContext& ctx);
void RegisterDeploymentRoutes(Router& router, ApiContext& ctx);
void RegisterJobspecRoutes(Router& router, ApiContext& ctx);
void RegisterAllocRoutes(Router& router, ApiContext& ctx);
void RegisterEvalRoutes(Router& router, ApiContext& ctx);
void RegisterNodeRoutes(Router& router, ApiContext& ctx);
void RegisterOperatorRoutes(Router& router, ApiContext& ctx);
void RegisterClientRoutes(Router& router, ApiContext& ctx);
void RegisterFsRoutes(Router& router, ApiContext& ctx);
void RegisterStatsRoutes(Router& router, ApiContext& ctx);
void RegisterMetricsRoutes(Router& router, ApiContext& ctx);

// Drover's client protocol (rpc/protocol.h), for the servers' RPC port. REQUIRES:
// ctx.server.
void RegisterRpcRoutes(Router& router, ApiContext& ctx);

}  // namespace drover::api
