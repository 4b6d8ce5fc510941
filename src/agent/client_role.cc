#include "agent/client_role.h"

#include "agent/device_plugin_config.h"
#include "agent/in_process_rpc.h"
#include "common/logging.h"
#include "rpc/peer_fetcher.h"
#include "rpc/remote_server_rpc.h"

namespace drover::agent {
namespace {

drivers::ExecDriverOptions ExecOptions(const AgentConfig& config) {
  drivers::ExecDriverOptions options;
  if (config.chroot_env)
    options.chroot_env = *config.chroot_env;
  return options;
}

}  // namespace

ClientRole::ClientRole(asio::io_context& io, asio::thread_pool& pool, common::Clock& clock,
                       const AgentConfig& config, const std::filesystem::path& data_dir,
                       state::StateDb* db, server::Server* server, const std::string& http_addr)
    // The node's drover-supervisor holds every task process (docs/supervisor.md).
    : supervisor_(io.get_executor(),
                  drivers::SupervisorLinkOptions{.binary = drivers::DefaultSupervisorBinary(),
                                                 .dir = data_dir / "supervisor",
                                                 .log_level = config.log_level}),
      raw_exec_(io.get_executor(), clock, supervisor_),
      exec_(io.get_executor(), clock, supervisor_, ExecOptions(config)),
      mock_(io.get_executor(), clock),
      docker_(io.get_executor(), pool, clock, config.docker, data_dir / "docker") {
  std::map<std::string, drivers::Driver*> drivers;
  // exec is on wherever it can work (root, cgroups); its fingerprint says whether.
  drivers["exec"] = &exec_;
  // docker is on wherever a daemon answers on its endpoint (its fingerprint says).
  drivers["docker"] = &docker_;
  // raw_exec runs tasks without isolation: like Nomad, only -dev enables it by
  // default; `plugin "raw_exec" { config { enabled = ... } }` decides otherwise.
  if (config.raw_exec_enabled.value_or(config.dev_mode))
    drivers["raw_exec"] = &raw_exec_;
  if (config.dev_mode)
    drivers["mock_driver"] = &mock_;
  std::erase_if(drivers, [&config](const auto& entry) {
    return config.driver_denylist.contains(entry.first) ||
           (!config.driver_allowlist.empty() && !config.driver_allowlist.contains(entry.first));
  });
  // Device plugins run from the start: the node registers with its devices.
  if (!config.device_plugins.empty()) {
    device_manager_ = std::make_unique<devices::DeviceManager>(
        io.get_executor(), clock, MakeDevicePlugins(config.device_plugins),
        devices::DeviceManagerConfig{.stats_interval = config.stats_interval});
    device_manager_->Start();
  }
  if (server != nullptr) {
    rpc_ = std::make_unique<InProcessRpc>(*server);
  } else {
    rpc_ = std::make_unique<rpc::RemoteServerRpc>(
        pool, rpc::RemoteServerRpcOptions{.servers = config.servers, .region = config.region});
  }
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
  cc.state_db = db;  // null: nothing is kept (a temp -dev dir)
  cc.device_manager = device_manager_.get();
  cc.snapshot_fetcher = &snapshot_fetcher_;
  client_ = std::make_unique<client::Client>(io.get_executor(), pool, clock, *rpc_, drivers, cc);
}

ClientRole::~ClientRole() = default;

asio::awaitable<absl::Status> ClientRole::Start() {
  // Before the client restores anything: drivers re-attach through its task list.
  // A supervisor that cannot start leaves its drivers unhealthy, not the agent down.
  (void)co_await supervisor_.Start();
  co_await docker_.Start();
  if (absl::Status s = co_await client_->Start(); !s.ok())
    co_return s;
  if (const int removed = co_await docker_.RemoveDangling(client_->node().id); removed > 0)
    DROVER_LOG_WARN("agent: removed {} docker containers that no allocation owns", removed);
  // Every task the client still owns is re-attached by now: whatever else the
  // supervisor holds belongs to allocations this agent no longer knows.
  if (supervisor_.connected()) {
    std::vector<drivers::SupervisedDriver*> supervised = {&raw_exec_, &exec_};
    const int reaped = co_await drivers::ReapUnownedTasks(supervisor_, std::move(supervised));
    if (reaped > 0)
      DROVER_LOG_WARN("agent: killed {} tasks that no allocation owns", reaped);
  }
  co_return absl::OkStatus();
}

asio::awaitable<void> ClientRole::Shutdown(bool destroy) {
  if (!destroy) {
    // Tasks keep running under the supervisor; the next agent on this data dir
    // re-attaches them from the state DBs.
    co_await client_->Shutdown();
  } else {
    // A dev agent owns its tasks (as Nomad's -dev does): stop them all first.
    co_await client_->ShutdownAndDestroy();
    // Nothing runs any more: the supervisor goes too (its dir may be removed next).
    if (absl::Status s = co_await supervisor_.Shutdown(); !s.ok())
      DROVER_LOG_WARN("agent: supervisor left running: {}", s.ToString());
  }
  if (device_manager_ != nullptr)
    co_await device_manager_->Stop();
  co_await docker_.Shutdown();
  supervisor_.Close();
}

}  // namespace drover::agent
