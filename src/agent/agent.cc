#include "agent/agent.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>

#include "agent/agent_metrics.h"
#include "agent/client_adapter.h"
#include "agent/client_role.h"
#include "agent/memory_trim.h"
#include "agent/server_adapter.h"
#include "api/api_context.h"
#include "api/forward.h"
#include "api/http_server.h"
#include "common/async_mutex.h"
#include "common/beneath.h"
#include "common/fds.h"
#include "common/logging.h"
#include "common/mounts.h"
#include "common/offload.h"
#include "server/ha.h"
#include "server/server.h"
#include "state/state_db.h"

namespace drover::agent {
namespace fs = std::filesystem;

namespace {

constexpr char kVersion[] = "0.1.0";

// Removes a -dev temp data dir on the way out. Tasks wrote into it (and may still be
// running after a second Ctrl-C): nothing mounted in it is entered and no link is
// followed.
struct TempDirGuard {
  fs::path path;
  ~TempDirGuard() {
    if (path.empty())
      return;
    if (absl::Status s = common::UnmountUnder(path); !s.ok())
      DROVER_LOG_WARN("agent: {}; leaving {} in place", s.ToString(), path.string());
    else if (absl::Status r = common::RemoveTree(path); !r.ok())
      DROVER_LOG_WARN("agent: {}", r.ToString());
  }
};

// Opens one of the agent's state DBs. A damaged file stops the agent (its error names
// the file) unless `reset` is set: then it is renamed aside and an empty DB is used.
template <typename T>
absl::StatusOr<T> OpenStateFile(const fs::path& file, bool reset,
                                const std::function<absl::StatusOr<T>()>& open) {
  absl::StatusOr<T> db = open();
  if (db.ok() || !absl::IsDataLoss(db.status()) || !reset)
    return db;
  const fs::path aside = file.string() + ".corrupt-" + std::to_string(::time(nullptr));
  std::error_code ec;
  fs::rename(file, aside, ec);
  if (ec)
    return absl::InternalError("failed to move damaged state DB " + file.string() +
                               " aside: " + ec.message());
  // What the lost DB recorded is gone: tasks it had started and that still run are
  // not re-attached; the start-up sweep kills them (ReapUnownedTasks).
  DROVER_LOG_WARN(
      "agent: {}; moved it to {} and starting with an empty one (tasks it recorded are "
      "stopped, not re-attached)",
      std::string(db.status().message()), aside.string());
  return open();
}

bool IsLoopback(const std::string& address) {
  boost::system::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  return !ec && ip.is_loopback();
}

// Creates (or, for -dev without one, makes a temporary) data dir and gives it its
// mode. Prints why and returns nothing on failure.
std::optional<fs::path> PrepareDataDir(const AgentConfig& config, TempDirGuard& temp_guard) {
  fs::path data_dir = config.data_dir;
  if (data_dir.empty()) {
    if (!config.dev_mode) {
      std::fprintf(stderr, "Must specify either a data directory or -dev\n");
      return std::nullopt;
    }
    std::string tmpl = (fs::temp_directory_path() / "drover-dev-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("failed to create a temporary data dir");
      return std::nullopt;
    }
    data_dir = tmpl;
    temp_guard.path = data_dir;
  }
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) {
    std::fprintf(stderr, "Error: failed to create data dir '%s': %s\n", data_dir.c_str(),
                 ec.message().c_str());
    return std::nullopt;
  }
  data_dir = fs::absolute(data_dir);
  // Others may pass through (a task running as another user reaches its own dirs) but
  // not list: allocation dirs are not for other local users to find (docs/security.md).
  fs::permissions(data_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                  ec);
  if (ec) {
    std::fprintf(stderr, "Error: failed to chmod data dir '%s': %s\n", data_dir.c_str(),
                 ec.message().c_str());
    return std::nullopt;
  }
  return data_dir;
}

// The configured limits, with connections capped by the descriptors this process may
// open (the limit is raised to its hard maximum first): never so many connections that
// nothing is left for state files, tasks' log pipes and the like.
api::HttpLimits HttpLimitsFor(const AgentConfig& config) {
  const long descriptors = common::RaiseDescriptorLimit();
  api::HttpLimits limits = config.http_limits;
  limits.max_conns =
      std::min<size_t>(limits.max_conns, static_cast<size_t>(std::max(descriptors / 2, 16L)));
  return limits;
}

// The RPC port's: HttpLimitsFor's, with its own connection limits.
api::HttpLimits RpcLimitsFor(const AgentConfig& config) {
  const long descriptors = common::RaiseDescriptorLimit();
  const size_t cap = static_cast<size_t>(std::max(descriptors / 2, 16L));
  api::HttpLimits limits = HttpLimitsFor(config);
  limits.max_conns = std::min(config.rpc_max_conns.value_or(cap), cap);
  limits.max_conns_per_client = config.rpc_max_conns_per_client == 0
                                    ? std::numeric_limits<size_t>::max()
                                    : config.rpc_max_conns_per_client;
  return limits;
}

// An agent on loopback is a developer's: every request's Host is checked, as a
// DNS-rebinding page's reads may carry no header saying they come from a browser.
api::BrowserPolicy BrowserPolicyFor(const AgentConfig& config) {
  api::BrowserPolicy browser = config.browser;
  browser.check_every_host = IsLoopback(config.bind_addr);
  return browser;
}

void PrintBanner(const AgentConfig& c, const std::string& http_addr, const std::string& rpc_addr,
                 const fs::path& data_dir) {
  std::printf(
      "==> Drover agent configuration:\n\n"
      "       Advertise Addrs: HTTP: %s%s%s\n"
      "            Bind Addrs: HTTP: %s\n"
      "                Client: %s\n"
      "              Data Dir: %s\n"
      "             Log Level: %s\n"
      "                Region: %s (DC: %s)\n"
      "                Server: %s\n"
      "               Version: %s\n\n"
      "==> Drover agent started! Log data will stream in below:\n\n",
      http_addr.c_str(), rpc_addr.empty() ? "" : "; RPC: ", rpc_addr.c_str(), http_addr.c_str(),
      c.client_enabled ? "true" : "false", data_dir.c_str(), c.log_level.c_str(), c.region.c_str(),
      c.datacenter.c_str(), c.server_enabled ? "true" : "false", kVersion);
  std::fflush(stdout);
}

// Writes `content` to <dir>/<name> through a rename: a reader sees all of it or nothing.
void WriteReadyFile(const fs::path& dir, const std::string& name, const std::string& content) {
  {
    std::ofstream out(dir / (name + ".tmp"), std::ios::trunc);
    out << content << "\n";
  }
  std::error_code ec;
  fs::rename(dir / (name + ".tmp"), dir / name, ec);
}

int Refuse(asio::thread_pool& pool, const absl::Status& s) {
  std::fprintf(stderr, "Error starting agent: %s%s\n", s.ToString().c_str(),
               absl::IsDataLoss(s) ? " (-reset-corrupt-state moves it aside)" : "");
  pool.join();
  return 1;
}

// Opens the server's state DB into `server` (a damaged one stops the agent unless
// config.reset_corrupt_state).
absl::Status OpenServerState(const AgentConfig& config, const fs::path& data_dir,
                             server::Server& server) {
  // Opened and loaded as one step: a record that cannot be decoded is damage too.
  std::function<absl::StatusOr<bool>()> open = [&data_dir, &server]() -> absl::StatusOr<bool> {
    auto db = server::OpenServerStore(data_dir.string());
    if (!db.ok())
      return db.status();
    if (absl::Status s = server.state().Attach(std::move(*db)); !s.ok())
      return s;
    return true;
  };
  return OpenStateFile(data_dir / "server" / "state.db", config.reset_corrupt_state, open).status();
}

server::ServerConfig ServerConfigFor(const AgentConfig& config) {
  return server::ServerConfig{
      .region = config.region,
      .min_heartbeat_ttl = config.min_heartbeat_ttl,
      .max_heartbeats_per_second = config.max_heartbeats_per_second,
      .heartbeat_grace = config.heartbeat_grace,
      .memory_oversubscription = config.memory_oversubscription,
      .ha = !config.etcd.endpoints.empty(),
      // etcd takes requests of 1.5 MiB by default; an
      // allocation's record holds its job.
      .max_job_record_bytes = config.etcd.endpoints.empty() ? 0 : size_t{1} << 20,
      .gc = {.eval = config.eval_gc_threshold,
             .batch_eval = config.batch_eval_gc_threshold,
             .job = config.job_gc_threshold,
             .node = config.node_gc_threshold},
      .gc_interval = config.job_gc_interval,
      .job_tracked_versions = config.job_tracked_versions,
      .event_buffer_size = config.event_buffer_size};
}

// How other servers reach a listener bound at `bound` ("host:port"): the advertised
// "host" or "host:port" when one is configured (a bare host gets the bound port).
std::string Advertised(const std::string& advertise, const std::string& bound) {
  if (advertise.empty())
    return bound;
  if (advertise.find(':') != std::string::npos)
    return advertise;
  return advertise + bound.substr(bound.rfind(':'));
}

server::HaConfig HaConfigFor(const AgentConfig& config) {
  return server::HaConfig{
      .endpoints = config.etcd.endpoints,
      .prefix = config.etcd.prefix,
      .dial_timeout = config.etcd.dial_timeout,
      .lease_ttl_seconds =
          std::chrono::duration_cast<std::chrono::seconds>(config.etcd.lease_ttl).count(),
      .region = config.region,
      .bootstrap_expect = config.bootstrap_expect};
}

// When memory runs out the kernel should pick tasks before the agent (and the
// supervisor and its reaper, at -1000, last of all). Lowering it needs
// CAP_SYS_RESOURCE: an agent without it runs at the default.
void LowerOomScore() {
  std::FILE* f = std::fopen("/proc/self/oom_score_adj", "we");
  if (f == nullptr)
    return;
  const bool wrote = std::fputs("-500", f) >= 0;
  if (std::fclose(f) != 0 || !wrote)
    DROVER_LOG_DEBUG("agent: oom_score_adj left as it was: {}", std::strerror(errno));
}

}  // namespace

int RunAgent(const AgentConfig& config) {
  common::InitLogging(config.log_level);
  LowerOomScore();
  TempDirGuard temp_guard;
  // A data dir the user chose keeps the agent's state; a temp -dev dir does not.
  const bool persistent = !config.data_dir.empty();
  std::optional<fs::path> prepared = PrepareDataDir(config, temp_guard);
  if (!prepared)
    return 1;
  const fs::path data_dir = *prepared;

  asio::io_context io;
  asio::thread_pool pool(2);
  common::RealClock clock;

  std::unique_ptr<server::Server> server;
  if (config.server_enabled) {
    server =
        std::make_unique<server::Server>(io.get_executor(), pool, clock, ServerConfigFor(config));
    // With etcd the state lives there (docs/ha.md), not in the data dir.
    if (persistent && config.etcd.endpoints.empty()) {
      if (absl::Status s = OpenServerState(config, data_dir, *server); !s.ok())
        return Refuse(pool, s);
    }
  }
  std::unique_ptr<state::StateDb> client_db;
  if (config.client_enabled && persistent) {
    std::function<absl::StatusOr<std::unique_ptr<state::StateDb>>()> open_client = [&data_dir] {
      return state::OpenStateDb(data_dir);
    };
    auto opened =
        OpenStateFile(state::StateDbFile(data_dir), config.reset_corrupt_state, open_client);
    if (!opened.ok())
      return Refuse(pool, opened.status());
    client_db = std::move(*opened);
  }

  api::Router router;
  api::ApiContext ctx;
  // The API sees the server and the client through these (api/server_api.h,
  // api/client_api.h).
  std::optional<ServerAdapter> server_api;
  std::unique_ptr<server::HaCoordinator> ha;
  ctx.pool = &pool;
  // API requests take turns on the pool: the scheduler always has a thread.
  common::AsyncMutex request_work(io.get_executor());
  ctx.request_work = &request_work;
  ctx.clock = &clock;
  api::HttpServer http(io.get_executor(), router, HttpLimitsFor(config), BrowserPolicyFor(config));
  auto port = http.Listen(config.bind_addr, static_cast<uint16_t>(config.http_port));
  if (!port.ok())
    return Refuse(pool, port.status());
  const std::string http_addr = config.bind_addr + ":" + std::to_string(*port);
  // A server's RPC port serves clients on other machines: the client protocol, and the
  // API for client-only agents that forward to it (docs/cluster.md).
  api::Router rpc_router;
  std::unique_ptr<api::HttpServer> rpc_http;
  std::string rpc_addr;
  if (server != nullptr && !config.dev_mode) {
    rpc_http = std::make_unique<api::HttpServer>(io.get_executor(), rpc_router,
                                                 RpcLimitsFor(config), BrowserPolicyFor(config));
    auto rpc_port = rpc_http->Listen(config.bind_addr, static_cast<uint16_t>(config.rpc_port));
    if (!rpc_port.ok())
      return Refuse(pool, rpc_port.status());
    rpc_addr = config.bind_addr + ":" + std::to_string(*rpc_port);
  }

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const std::string agent_name = config.node_name.empty() ? host : config.node_name;
  if (server != nullptr && !config.etcd.endpoints.empty()) {
    ha = std::make_unique<server::HaCoordinator>(
        io.get_executor(), *server, pool, clock, HaConfigFor(config),
        server::Member{.name = agent_name,
                       .http_addr = Advertised(config.advertise_http, http_addr),
                       .rpc_addr = Advertised(config.advertise_rpc, rpc_addr)});
  }
  if (server != nullptr)
    ctx.server = &server_api.emplace(*server, ha.get());
  AgentMetrics agent_metrics(io.get_executor(), pool, clock, config, host);
  MemoryTrimmer memory_trimmer(io.get_executor(), pool, clock);
  ctx.metrics = &agent_metrics.registry();
  ctx.prometheus_metrics = config.prometheus_metrics;
  if (server != nullptr)
    agent_metrics.WatchServer(*server);
  http.set_metrics(&agent_metrics.registry(), "http");
  agent_metrics.WatchHttp(http, "http");
  if (rpc_http != nullptr) {
    rpc_http->set_metrics(&agent_metrics.registry(), "rpc");
    agent_metrics.WatchHttp(*rpc_http, "rpc");
  }

  std::unique_ptr<ClientRole> client;
  std::optional<ClientAdapter> client_api;
  if (config.client_enabled) {
    client = std::make_unique<ClientRole>(io, pool, clock, config, data_dir, client_db.get(),
                                          server.get(), http_addr);
    ctx.client = &client_api.emplace(client->client());
    agent_metrics.WatchClient(client->client(), client->supervisor(), client_db.get(),
                              data_dir / "alloc");
  }

  ctx.info.name = agent_name;
  ctx.info.region = config.region;
  ctx.info.datacenter = config.datacenter;
  ctx.info.bind_addr = config.bind_addr;
  ctx.info.http_port = *port;
  ctx.info.version = kVersion;
  ctx.info.data_dir = data_dir.string();
  ctx.info.dev_mode = config.dev_mode;
  ctx.info.rpc_port = config.rpc_port;
  ctx.info.rpc_addr = config.bind_addr + ":" + std::to_string(config.rpc_port);
  if (!rpc_addr.empty()) {
    ctx.info.rpc_addr = rpc_addr;
    ctx.info.rpc_port = std::stoi(rpc_addr.substr(rpc_addr.rfind(':') + 1));
  }
  if (server == nullptr)
    ctx.info.servers = config.servers;
  api::RegisterRoutes(router, ctx);
  if (server == nullptr)
    router.SetFallback(api::ForwardToServers(config.servers));
  if (rpc_http != nullptr) {
    api::RegisterRoutes(rpc_router, ctx);
    api::RegisterRpcRoutes(rpc_router, ctx);
  }
  if (ha != nullptr) {
    // A follower's writes go to the leader (reads are served from its own view).
    const std::function<api::Handler(api::Handler)> to_leader = [&ctx](api::Handler local) {
      return api::ForwardWritesToLeader(ctx, std::move(local));
    };
    for (const char* prefix :
         {"/v1/job", "/v1/node", "/v1/allocation", "/v1/evaluation", "/v1/operator/snapshot"}) {
      router.WrapRoutes(prefix, to_leader);
      rpc_router.WrapRoutes(prefix, to_leader);
    }
    rpc_router.WrapRoutes("/rpc/", to_leader);
    const std::function<api::Handler(api::Handler)> known_leader = [&ctx](api::Handler local) {
      return api::ReportKnownLeader(ctx, std::move(local));
    };
    router.WrapRoutes("/v1/", known_leader);
    rpc_router.WrapRoutes("/v1/", known_leader);
  }

  int exit_code = 0;
  bool shutting_down = false;
  auto shutdown = [&]() -> asio::awaitable<void> {
    if (shutting_down)
      co_return;
    shutting_down = true;
    DROVER_LOG_INFO("agent: shutting down");
    agent_metrics.Stop();
    memory_trimmer.Stop();
    http.Stop();
    if (rpc_http != nullptr)
      rpc_http->Stop();
    // Another server takes over at once (the term is resigned, not left to expire).
    if (ha != nullptr) {
      co_await ha->Stop();
      if (!ha->stopped()) {
        // etcd did not answer in time: the loops' frames still refer to the
        // coordinator, and are only destroyed with the io_context. The process is
        // exiting: keep it alive rather than let them touch freed memory.
        DROVER_LOG_ERROR("agent: etcd did not answer while stopping; leaving without resigning");
        (void)ha.release();
      }
    }
    // No new placements while the client winds down.
    if (server != nullptr)
      server->Stop();
    if (client != nullptr)
      co_await client->Shutdown(/*destroy=*/config.dev_mode);
    if (server != nullptr) {
      if (absl::Status s = co_await server->state().Flush(); !s.ok())
        DROVER_LOG_ERROR("agent: {}", s.ToString());
    }
    io.stop();
  };

  if (server != nullptr)
    server->Start();
  auto startup = [&]() -> asio::awaitable<void> {
    if (ha != nullptr) {
      // Waits (retrying) while etcd does not answer; refuses another cluster's prefix.
      if (absl::Status s = co_await ha->Connect(); !s.ok()) {
        if (!absl::IsCancelled(s)) {
          std::fprintf(stderr, "Error starting agent: %s\n", s.ToString().c_str());
          exit_code = 1;
        }
        io.stop();
        co_return;
      }
      ha->Start();
    }
    if (client != nullptr) {
      if (absl::Status s = co_await client->Start(); !s.ok()) {
        std::fprintf(stderr, "Error starting agent: %s\n", s.ToString().c_str());
        exit_code = 1;
        io.stop();
        co_return;
      }
    }
    agent_metrics.Start();
    memory_trimmer.Start();
    http.Start();
    if (rpc_http != nullptr) {
      rpc_http->Start();
      WriteReadyFile(data_dir, "rpc.addr", rpc_addr);
      DROVER_LOG_INFO("agent: RPC listening on {}", rpc_addr);
    }
    // Ready-file for tests and scripts: written once the API accepts requests.
    WriteReadyFile(data_dir, "http.addr", http_addr);
    PrintBanner(config, http_addr, rpc_addr, data_dir);
    DROVER_LOG_INFO("agent: HTTP API listening on http://{}", http_addr);
  };
  common::SpawnDetached(io.get_executor(), startup(), "agent startup");

  asio::signal_set signals(io, SIGINT, SIGTERM);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& err, int sig) {
        if (err)
          return;
        if (shutting_down) {
          DROVER_LOG_WARN("agent: caught signal {} again; exiting without cleanup", sig);
          io.stop();
          return;
        }
        DROVER_LOG_INFO("agent: caught signal {}", sig);
        common::SpawnDetached(io.get_executor(), shutdown(), "agent shutdown");
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);

  io.run();
  pool.join();
  std::error_code rm;
  fs::remove(data_dir / "http.addr", rm);
  fs::remove(data_dir / "rpc.addr", rm);
  return exit_code;
}

}  // namespace drover::agent
