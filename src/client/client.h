// The client: this node's agent-side half. Fingerprints and registers the node,
// heartbeats, watches the server for the node's allocations (blocking queries, diffed
// by AllocModifyIndex into add / update / remove), runs an AllocRunner for each, and
// sends their status back in batches (reference §1.2–1.4).
//
// Coroutines on the control loop; no locks.
#pragma once

#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/allocrunner/alloc_runner.h"
#include "client/allocwatcher/remote_watcher.h"
#include "client/gc.h"
#include "client/host_stats.h"
#include "client/server_rpc.h"
#include "common/cancellation.h"
#include "common/event.h"
#include "devices/device_manager.h"
#include "drivers/driver.h"
#include "model/node.h"
#include "state/state_db.h"

namespace drover::client {

struct ClientConfig {
  std::filesystem::path data_dir;
  std::string node_name;
  std::string datacenter = "dc1";
  std::string region = "global";
  std::string http_addr;
  bool dev_mode = false;
  // Until a server gives the node its heartbeat TTL.
  common::Duration heartbeat_interval = std::chrono::seconds(10);
  common::Duration sync_interval = std::chrono::milliseconds(200);
  common::Duration retry_interval = std::chrono::seconds(5);
  GcConfig gc;
  // From the agent configuration's client block (docs/agent-config.md).
  std::string node_class;
  std::string node_pool;  // empty: "default"
  std::map<std::string, std::string> meta;
  model::NodeReservedResources reserved;
  // How often each allocation samples its tasks' resource usage.
  common::Duration stats_interval = std::chrono::seconds(1);
  // tmpfs for task secrets/ and private/ (needs root; on by default when root).
  bool secrets_tmpfs = true;
  // The node's device plugins (must outlive the client, started by the owner); null:
  // no devices.
  devices::DeviceManager* device_manager = nullptr;
  // How long Start waits for the device plugins' first inventory.
  common::Duration device_fingerprint_wait = std::chrono::seconds(10);
  // Where allocations and task state are persisted and restored from (must outlive
  // the client); null: nothing is persisted.
  state::StateDb* state_db = nullptr;
  // Reaches other nodes for the ephemeral disk of a previous allocation that ran there
  // (must outlive the client); null: such data is not migrated (-dev, one node).
  allocwatcher::SnapshotFetcher* snapshot_fetcher = nullptr;
};

class Client {
 public:
  // `pool`, `clock`, `rpc` and the drivers must outlive the client.
  Client(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
         ServerRpc& rpc, std::map<std::string, drivers::Driver*> drivers, ClientConfig config);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Fingerprints, registers and starts the background loops. Errors are fatal to the
  // agent (e.g. an unusable data dir).
  asio::awaitable<absl::Status> Start();
  // Stops the loops and destroys every allocation (dev mode: tasks are killed).
  asio::awaitable<void> ShutdownAndDestroy();
  // Stops the loops and leaves every task running, for the next agent to restore.
  asio::awaitable<void> Shutdown();

  const model::Node& node() const { return node_; }
  // The node's own usage (GET /v1/client/stats). Collect() on the blocking pool.
  HostStatsCollector& host_stats();
  allocrunner::AllocRunner* GetAllocRunner(const std::string& alloc_id);
  // The node's device manager, or null when it runs no device plugins.
  devices::DeviceManager* device_manager() const { return config_.device_manager; }
  size_t num_allocs() const { return runners_.size(); }
  // Forgotten allocations still remembered (see forgotten_): for tests.
  size_t num_forgotten() const { return forgotten_.size(); }
  // Every allocation runner the client holds, destroyed ones included (metrics).
  void ForEachAllocRunner(const std::function<void(allocrunner::AllocRunner&)>& fn) {
    for (auto& [id, r] : runners_)
      fn(*r);
  }

  // Destroys a terminal allocation's runner now (its directory goes). NotFound for an
  // unknown allocation, FailedPrecondition for one that is not terminal.
  asio::awaitable<absl::Status> CollectAllocation(const std::string& alloc_id);
  // Destroys every terminal allocation's runner.
  asio::awaitable<void> CollectAll();

 private:
  asio::awaitable<void> HeartbeatLoop();
  asio::awaitable<void> WatchAllocations();
  asio::awaitable<void> SyncLoop();
  // Re-registers the node when the device manager's inventory changes.
  asio::awaitable<void> DeviceWatch();
  // Registers node_ as it is now, recording the version the servers accepted.
  asio::awaitable<absl::Status> RegisterCurrentNode();
  // Node events for the servers (model::kMaxNodeEvents at most, oldest dropped), sent
  // after a heartbeat and kept until the servers took them.
  void QueueNodeEvents(std::vector<model::NodeEvent> events);
  asio::awaitable<absl::Status> SendNodeEvents();
  void RunAllocs(const NodeAllocations& update);
  void AddAlloc(std::shared_ptr<const model::Allocation> alloc);
  // `recorded`, when given, is set once the allocation is in the state DB: the runner
  // starts nothing before.
  std::unique_ptr<allocrunner::AllocRunner> MakeRunner(
      std::shared_ptr<const model::Allocation> alloc,
      std::unique_ptr<allocwatcher::PrevAllocWatcher> prev,
      std::shared_ptr<common::Event> recorded = nullptr);
  // Rebuilds the runners persisted by an earlier agent and re-attaches their tasks
  // (reference §4.7).
  asio::awaitable<void> RestoreAllocs();
  // Persistence, fire and forget (errors are logged; a failed write is retried by the
  // next change). Nothing is written for an allocation whose bucket was deleted.
  void Persist(const std::string& alloc_id, std::function<asio::awaitable<absl::Status>()> write);
  asio::awaitable<void> Forget(std::string alloc_id);
  void PruneForgotten();
  void AllocStateUpdated(const allocrunner::ReportPtr& report);
  asio::awaitable<void> GcLoop();
  // Destroys terminal runners, oldest first, until adding `incoming` allocations keeps
  // the node within max_allocs.
  void MakeRoomFor(size_t incoming);
  asio::awaitable<void> DestroyRunner(std::string alloc_id);
  // Whether the GC may take `alloc_id` now: not while a live replacement may still
  // migrate its data.
  bool Collectable(const std::string& alloc_id) const;
  std::unique_ptr<allocwatcher::PrevAllocWatcher> PrevAllocWatcherFor(
      const model::Allocation& alloc);

  asio::any_io_executor executor_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  ServerRpc& rpc_;
  common::Duration heartbeat_ttl_;  // as the servers last said
  std::deque<model::NodeEvent> pending_events_;
  std::map<std::string, drivers::Driver*> drivers_;
  ClientConfig config_;
  model::Node node_;
  std::shared_ptr<const std::map<std::string, std::string>> host_env_;
  std::shared_ptr<taskrunner::StatsSampler> stats_sampler_;
  // Destroyed (garbage-collected) runners stay here until the server forgets the
  // allocation, so that it is not added again.
  std::map<std::string, std::unique_ptr<allocrunner::AllocRunner>> runners_;
  GcQueue gc_queue_;
  std::set<std::string> collected_;  // destroyed by GC (or being destroyed)
  // Latest client view per alloc not yet acknowledged by the server (latest wins). The
  // reports are the runners' own (shared, never modified), as are the acknowledged ones.
  std::map<std::string, allocrunner::ReportPtr> pending_updates_;
  // The last update of each alloc the servers acknowledged (persisted as the alloc's
  // acknowledged_state): an update equal to it is not sent again, so a restarted agent
  // whose allocations did not change sends nothing.
  std::map<std::string, allocrunner::ReportPtr> acknowledged_;
  common::Notifier urgent_update_;
  common::CancellationScopePtr stop_;
  bool shutting_down_ = false;
  int loops_running_ = 0;
  common::Notifier loop_exited_;
  std::unique_ptr<HostStatsCollector> host_stats_;
  std::unique_ptr<state::StateDb> noop_db_;
  state::StateDb* db_;
  // Allocations whose state DB bucket was deleted: late writes must not revive them. Each
  // with the number of update batches taken by then; dropped by PruneForgotten once
  // nothing can write the bucket again.
  std::map<std::string, uint64_t> forgotten_;
  uint64_t batches_taken_ = 0;
  uint64_t batches_done_ = 0;
  // Set once the servers answered (restored tasks that could not be re-attached wait).
  common::Event servers_contacted_;
  // node_ changes (drivers, devices) count up node_version_; registered_version_ is the
  // newest version a successful registration carried. While it is behind, heartbeats
  // register the node instead, so a change the servers did not accept is sent again,
  // and a call that succeeded with an older copy does not hide a newer one.
  uint64_t node_version_ = 0;
  uint64_t registered_version_ = 0;
};

}  // namespace drover::client
