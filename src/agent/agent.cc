#include "agent/agent.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>

#include "agent/device_plugin_config.h"
#include "agent/in_process_rpc.h"
#include "api/api_context.h"
#include "api/http_server.h"
#include "client/client.h"
#include "common/async_mutex.h"
#include "common/beneath.h"
#include "common/fds.h"
#include "common/logging.h"
#include "common/mounts.h"
#include "common/offload.h"
#include "drivers/exec/exec_driver.h"
#include "drivers/mock/mock_driver.h"
#include "drivers/raw_exec/raw_exec_driver.h"
#include "drivers/supervised/supervisor_link.h"
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

// An agent on loopback is a developer's: every request's Host is checked, as a
// DNS-rebinding page's reads may carry no header saying they come from a browser.
api::BrowserPolicy BrowserPolicyFor(const AgentConfig& config) {
  api::BrowserPolicy browser = config.browser;
  browser.check_every_host = IsLoopback(config.bind_addr);
  return browser;
}

void PrintBanner(const AgentConfig& c, const std::string& http_addr, const fs::path& data_dir) {
  std::printf(
      "==> Drover agent configuration:\n\n"
      "       Advertise Addrs: HTTP: %s\n"
      "            Bind Addrs: HTTP: %s\n"
      "                Client: true\n"
      "              Data Dir: %s\n"
      "             Log Level: %s\n"
      "                Region: %s (DC: %s)\n"
      "                Server: true\n"
      "               Version: %s\n\n"
      "==> Drover agent started! Log data will stream in below:\n\n",
      http_addr.c_str(), http_addr.c_str(), data_dir.c_str(), c.log_level.c_str(), c.region.c_str(),
      c.datacenter.c_str(), kVersion);
  std::fflush(stdout);
}

}  // namespace

int RunAgent(const AgentConfig& config) {
  common::InitLogging(config.log_level);
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

  server::Server server(
      io.get_executor(), pool, clock,
      server::ServerConfig{.region = config.region,
                           .memory_oversubscription = config.memory_oversubscription});
  std::unique_ptr<state::StateDb> client_db;
  if (persistent) {
    // Opened and loaded as one step: a record that cannot be decoded is damage too.
    std::function<absl::StatusOr<bool>()> open_server = [&data_dir,
                                                         &server]() -> absl::StatusOr<bool> {
      auto db = server::OpenServerStore(data_dir.string());
      if (!db.ok())
        return db.status();
      if (absl::Status s = server.state().Attach(std::move(*db)); !s.ok())
        return s;
      return true;
    };
    auto server_db =
        OpenStateFile(data_dir / "server" / "state.db", config.reset_corrupt_state, open_server);
    const auto refuse = [&pool](const absl::Status& s) {
      std::fprintf(stderr, "Error starting agent: %s%s\n", s.ToString().c_str(),
                   absl::IsDataLoss(s) ? " (-reset-corrupt-state moves it aside)" : "");
      pool.join();
      return 1;
    };
    if (!server_db.ok())
      return refuse(server_db.status());
    std::function<absl::StatusOr<std::unique_ptr<state::StateDb>>()> open_client = [&data_dir] {
      return state::OpenStateDb(data_dir);
    };
    auto opened =
        OpenStateFile(state::StateDbFile(data_dir), config.reset_corrupt_state, open_client);
    if (!opened.ok())
      return refuse(opened.status());
    client_db = std::move(*opened);
  }
  // The node's drover-supervisor holds every task process (docs/supervisor.md).
  drivers::SupervisorLink supervisor(
      io.get_executor(),
      drivers::SupervisorLinkOptions{.binary = drivers::DefaultSupervisorBinary(),
                                     .dir = data_dir / "supervisor",
                                     .log_level = config.log_level});
  drivers::RawExecDriver raw_exec(io.get_executor(), clock, supervisor);
  drivers::ExecDriverOptions exec_options;
  if (config.chroot_env) {
    exec_options.chroot_env = *config.chroot_env;
  }
  drivers::ExecDriver exec(io.get_executor(), clock, supervisor, exec_options);
  drivers::MockDriver mock(io.get_executor(), clock);
  std::map<std::string, drivers::Driver*> drivers;
  // exec is on wherever it can work (root, cgroups); its fingerprint says whether.
  drivers["exec"] = &exec;
  // raw_exec runs tasks without isolation: like Nomad, only -dev enables it by
  // default; `plugin "raw_exec" { config { enabled = ... } }` decides otherwise.
  if (config.raw_exec_enabled.value_or(config.dev_mode)) {
    drivers["raw_exec"] = &raw_exec;
  }
  if (config.dev_mode) {
    drivers["mock_driver"] = &mock;
  }
  std::erase_if(drivers, [&config](const auto& entry) {
    return config.driver_denylist.contains(entry.first) ||
           (!config.driver_allowlist.empty() && !config.driver_allowlist.contains(entry.first));
  });

  api::Router router;
  api::ApiContext ctx;
  ctx.server = &server;
  ctx.pool = &pool;
  // API requests take turns on the pool: the scheduler always has a thread.
  common::AsyncMutex request_work(io.get_executor());
  ctx.request_work = &request_work;
  ctx.clock = &clock;
  api::HttpServer http(io.get_executor(), router, HttpLimitsFor(config), BrowserPolicyFor(config));
  auto port = http.Listen(config.bind_addr, static_cast<uint16_t>(config.http_port));
  if (!port.ok()) {
    std::fprintf(stderr, "Error starting agent: %s\n",
                 std::string(port.status().message()).c_str());
    pool.join();
    return 1;
  }
  const std::string http_addr = config.bind_addr + ":" + std::to_string(*port);

  // Device plugins run from the start: the node registers with its devices.
  std::unique_ptr<devices::DeviceManager> device_manager;
  if (!config.device_plugins.empty()) {
    device_manager = std::make_unique<devices::DeviceManager>(
        io.get_executor(), clock, MakeDevicePlugins(config.device_plugins),
        devices::DeviceManagerConfig{.stats_interval = config.stats_interval});
    device_manager->Start();
  }

  InProcessRpc rpc(server);
  client::ClientConfig cc;
  cc.data_dir = data_dir;
  cc.node_name = config.node_name;
  cc.datacenter = config.datacenter;
  cc.region = config.region;
  cc.http_addr = http_addr;
  cc.dev_mode = config.dev_mode;
  cc.node_class = config.node_class;
  cc.node_pool = config.node_pool;
  cc.meta = config.meta;
  cc.reserved = config.reserved;
  cc.gc = config.gc;
  cc.stats_interval = config.stats_interval;
  cc.state_db = client_db.get();  // null: nothing is kept (a temp -dev dir)
  cc.device_manager = device_manager.get();
  client::Client client(io.get_executor(), pool, clock, rpc, drivers, cc);

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  ctx.client = &client;
  ctx.info.name = config.node_name.empty() ? host : config.node_name;
  ctx.info.region = config.region;
  ctx.info.datacenter = config.datacenter;
  ctx.info.bind_addr = config.bind_addr;
  ctx.info.http_port = *port;
  ctx.info.version = kVersion;
  ctx.info.data_dir = data_dir.string();
  ctx.info.dev_mode = config.dev_mode;
  api::RegisterRoutes(router, ctx);

  int exit_code = 0;
  bool shutting_down = false;
  auto shutdown = [&]() -> asio::awaitable<void> {
    if (shutting_down)
      co_return;
    shutting_down = true;
    DROVER_LOG_INFO("agent: shutting down");
    http.Stop();
    // No new placements while the client winds down.
    server.Stop();
    if (!config.dev_mode) {
      // Tasks keep running under the supervisor; the next agent on this data dir
      // re-attaches them from the state DBs.
      co_await client.Shutdown();
    } else {
      // A dev agent owns its tasks (as Nomad's -dev does): stop them all first.
      co_await client.ShutdownAndDestroy();
      // Nothing runs any more: the supervisor goes too (its dir may be removed next).
      if (absl::Status s = co_await supervisor.Shutdown(); !s.ok())
        DROVER_LOG_WARN("agent: supervisor left running: {}", s.ToString());
    }
    if (device_manager != nullptr)
      co_await device_manager->Stop();
    if (absl::Status s = co_await server.state().Flush(); !s.ok())
      DROVER_LOG_ERROR("agent: {}", s.ToString());
    supervisor.Close();
    io.stop();
  };

  server.Start();
  std::vector<drivers::SupervisedDriver*> supervised = {&raw_exec, &exec};
  common::SpawnDetached(
      io.get_executor(),
      [](client::Client& c, api::HttpServer& h, drivers::SupervisorLink& sup,
         std::vector<drivers::SupervisedDriver*> supervised, std::string addr, fs::path dir,
         const AgentConfig& cfg, int& code, asio::io_context& ioc) -> asio::awaitable<void> {
        // Before the client restores anything: drivers re-attach through its task list.
        // A supervisor that cannot start leaves its drivers unhealthy, not the agent down.
        (void)co_await sup.Start();
        absl::Status started = co_await c.Start();
        if (!started.ok()) {
          std::fprintf(stderr, "Error starting agent: %s\n", started.ToString().c_str());
          code = 1;
          ioc.stop();
          co_return;
        }
        // Every task the client still owns is re-attached by now: whatever else the
        // supervisor holds belongs to allocations this agent no longer knows.
        if (sup.connected()) {
          const int reaped = co_await drivers::ReapUnownedTasks(sup, std::move(supervised));
          if (reaped > 0)
            DROVER_LOG_WARN("agent: killed {} tasks that no allocation owns", reaped);
        }
        h.Start();
        // Ready-file for tests and scripts: written once the API accepts requests.
        {
          std::ofstream out(dir / "http.addr.tmp", std::ios::trunc);
          out << addr << "\n";
        }
        std::error_code rename_ec;
        fs::rename(dir / "http.addr.tmp", dir / "http.addr", rename_ec);
        PrintBanner(cfg, addr, dir);
        DROVER_LOG_INFO("agent: HTTP API listening on http://{}", addr);
      }(client, http, supervisor, supervised, http_addr, data_dir, config, exit_code, io),
      "agent startup");

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
  return exit_code;
}

}  // namespace drover::agent
