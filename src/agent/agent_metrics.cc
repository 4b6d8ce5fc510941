#include "agent/agent_metrics.h"

#include <unistd.h>

#include <cstdlib>
#include <map>

#include "api/http_server.h"
#include "client/client.h"
#include "client/host_stats.h"
#include "common/heap.h"
#include "common/logging.h"
#include "common/offload.h"
#include "drivers/supervised/supervisor_link.h"
#include "metrics/process_stats.h"
#include "server/server.h"
#include "state/state_db.h"

namespace drover::agent {

namespace {

using metrics::GaugeSink;
using metrics::Labels;

// nomad.runtime.*: what the agent process itself holds.
void CollectRuntime(GaugeSink& sink) {
  sink.Set("nomad.runtime.alloc_bytes", static_cast<double>(common::HeapBytesInUse()),
           {{"allocator", common::HeapAllocator()}});
  if (auto self = metrics::ReadProcessStats(getpid()); self.ok()) {
    sink.Set("nomad.runtime.sys_bytes", static_cast<double>(self->rss_bytes));
    sink.Set("drover.runtime.threads", static_cast<double>(self->threads));
    sink.Set("drover.runtime.open_fds", static_cast<double>(self->open_fds));
    sink.Set("drover.runtime.cpu_seconds", self->cpu_seconds);
  }
}

// Where an allocation stands, in nomad.client.allocations.* terms.
const char* AllocationState(allocrunner::AllocRunner& r) {
  const std::string status = r.ClientUpdate().client_status;
  if (model::IsClientTerminalStatus(status))
    return "terminal";
  if (status == model::kClientRunning)
    return "running";
  // Pending: waiting for a previous allocation (to migrate its data, or to stop), or
  // starting.
  const auto alloc = r.alloc();
  if (!r.prerun_done() && !alloc->previous_allocation.empty()) {
    const model::TaskGroup* g = alloc->Group();
    const bool migrate = g != nullptr && g->ephemeral_disk && g->ephemeral_disk->migrate;
    return migrate ? "migrating" : "blocked";
  }
  return "pending";
}

void CollectTaskUsage(GaugeSink& sink, const Labels& base, const model::TaskResourceUsage& u) {
  const auto set = [&](const char* name, double v) { sink.Set(name, v, base); };
  set("nomad.client.allocs.memory.rss", static_cast<double>(u.memory.rss));
  set("nomad.client.allocs.memory.cache", static_cast<double>(u.memory.cache));
  set("nomad.client.allocs.memory.swap", static_cast<double>(u.memory.swap));
  set("nomad.client.allocs.memory.usage", static_cast<double>(u.memory.usage));
  set("nomad.client.allocs.memory.max_usage", static_cast<double>(u.memory.max_usage));
  set("nomad.client.allocs.cpu.total_percent", u.cpu.percent);
  set("nomad.client.allocs.cpu.system", u.cpu.system_mode);
  set("nomad.client.allocs.cpu.user", u.cpu.user_mode);
  set("nomad.client.allocs.cpu.total_ticks", u.cpu.total_ticks);
  set("nomad.client.allocs.cpu.throttled_time", static_cast<double>(u.cpu.throttled_time));
  set("nomad.client.allocs.cpu.throttled_periods", static_cast<double>(u.cpu.throttled_periods));
}

void CollectHost(GaugeSink& sink, const Labels& node, const model::HostStats& h) {
  const auto d = [](auto v) { return static_cast<double>(v); };
  sink.Set("nomad.client.host.memory.total", d(h.memory_total), node);
  sink.Set("nomad.client.host.memory.available", d(h.memory_available), node);
  sink.Set("nomad.client.host.memory.used", d(h.memory_used), node);
  sink.Set("nomad.client.host.memory.free", d(h.memory_free), node);
  sink.Set("nomad.client.uptime", d(h.uptime_seconds), node);
  for (const model::HostCpuStats& c : h.cpus) {
    Labels l = node;
    l["cpu"] = c.cpu;
    sink.Set("nomad.client.host.cpu.total", c.total, l);
    sink.Set("nomad.client.host.cpu.user", c.user, l);
    sink.Set("nomad.client.host.cpu.system", c.system, l);
    sink.Set("nomad.client.host.cpu.idle", c.idle, l);
  }
  for (const model::HostDiskStats& disk : h.disks) {
    Labels l = node;
    l["disk"] = disk.device;
    sink.Set("nomad.client.host.disk.size", d(disk.size), l);
    sink.Set("nomad.client.host.disk.used", d(disk.used), l);
    sink.Set("nomad.client.host.disk.available", d(disk.available), l);
    sink.Set("nomad.client.host.disk.used_percent", disk.used_percent, l);
    sink.Set("nomad.client.host.disk.inodes_percent", disk.inodes_used_percent, l);
  }
}

}  // namespace

AgentMetrics::AgentMetrics(asio::any_io_executor executor, asio::thread_pool& pool,
                           common::Clock& clock, const AgentConfig& config,
                           const std::string& hostname)
    : executor_(executor),
      pool_(pool),
      clock_(clock),
      config_(config),
      registry_(clock, {.hostname = config.disable_hostname ? "" : hostname}) {
  registry_.AddCollector(CollectRuntime);
}

AgentMetrics::~AgentMetrics() {
  Stop();
}

void AgentMetrics::WatchServer(server::Server& server) {
  server.set_metrics(&registry_);
  registry_.AddCollector([&server](GaugeSink& sink) {
    sink.Set("nomad.nomad.broker.total_ready", static_cast<double>(server.pending_evals()));
  });
}

void AgentMetrics::WatchClient(client::Client& client, const drivers::SupervisorLink& link,
                               const state::StateDb* db, const std::filesystem::path& alloc_dir) {
  client_ = &client;
  double mhz = 0;
  if (auto it = client.node().attributes.find("cpu.frequency");
      it != client.node().attributes.end())
    mhz = std::strtod(it->second.c_str(), nullptr);
  host_collector_ = std::make_unique<client::HostStatsCollector>(alloc_dir, mhz);
  registry_.AddCollector([this, &client](GaugeSink& sink) { CollectClient(client, sink); });
  registry_.AddCollector(
      [this, &link, db](GaugeSink& sink) { CollectSupervisorAndStateDb(link, db, sink); });
}

void AgentMetrics::CollectClient(client::Client& client, GaugeSink& sink) {
  const model::Node& node = client.node();
  const Labels labels = {
      {"node_id", node.id}, {"datacenter", node.datacenter}, {"node_class", node.node_class}};
  std::map<std::string, int> states = {
      {"pending", 0}, {"running", 0}, {"terminal", 0}, {"blocked", 0}, {"migrating", 0}};
  int64_t cpu = 0, memory = 0, disk = 0;
  client.ForEachAllocRunner([&](allocrunner::AllocRunner& r) {
    if (r.destroyed())
      return;
    const char* state = AllocationState(r);
    ++states[state];
    const auto alloc = r.alloc();
    if (std::string_view(state) != "terminal") {
      for (const auto& [task, res] : alloc->allocated_resources.tasks) {
        cpu += res.cpu_shares;
        memory += res.memory_mb;
      }
      disk += alloc->allocated_resources.shared.disk_mb;
    }
    if (!config_.publish_allocation_metrics)
      return;
    for (taskrunner::TaskRunner* t : r.task_runners()) {
      auto usage = t->LatestStats();
      if (!usage)
        continue;
      CollectTaskUsage(sink,
                       {{"job", alloc->job_id},
                        {"task_group", alloc->task_group},
                        {"alloc_id", alloc->id},
                        {"task", t->name()},
                        {"namespace", alloc->namespace_}},
                       *usage);
    }
  });
  for (const auto& [state, n] : states)
    sink.Set("nomad.client.allocations." + state, n, labels);
  if (!config_.publish_node_metrics)
    return;
  const model::NodeResources& total = node.node_resources;
  const model::NodeReservedResources& reserved = node.reserved_resources;
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  sink.Set("nomad.client.allocated.cpu", d(cpu), labels);
  sink.Set("nomad.client.allocated.memory", d(memory), labels);
  sink.Set("nomad.client.allocated.disk", d(disk), labels);
  sink.Set("nomad.client.unallocated.cpu", d(total.cpu_shares - reserved.cpu_shares - cpu), labels);
  sink.Set("nomad.client.unallocated.memory", d(total.memory_mb - reserved.memory_mb - memory),
           labels);
  sink.Set("nomad.client.unallocated.disk", d(total.disk_mb - reserved.disk_mb - disk), labels);
  if (host_)
    CollectHost(sink, labels, *host_);
}

void AgentMetrics::CollectSupervisorAndStateDb(const drivers::SupervisorLink& link,
                                               const state::StateDb* db, GaugeSink& sink) {
  const drivers::SupervisorLink::Stats s = link.stats();
  registry_.SetCounterTotal("drover.client.supervisor.spawns", static_cast<double>(s.spawns));
  registry_.SetCounterTotal("drover.client.supervisor.spawn_failures",
                            static_cast<double>(s.spawn_failures));
  registry_.SetCounterTotal("drover.client.supervisor.exits", static_cast<double>(s.exits));
  registry_.SetCounterTotal("drover.client.supervisor.connects", static_cast<double>(s.connects));
  sink.Set("drover.client.supervisor.tasks", static_cast<double>(s.tasks));
  sink.Set("drover.client.supervisor.connected", link.connected() ? 1 : 0);
  if (db == nullptr)
    return;
  const state::StoreStats st = db->Stats();
  registry_.SetCounterTotal("drover.client.state_db.writes", static_cast<double>(st.writes));
  registry_.SetCounterTotal("drover.client.state_db.deduplicated",
                            static_cast<double>(st.deduplicated));
  registry_.SetCounterTotal("drover.client.state_db.commits", static_cast<double>(st.transactions));
  registry_.SetCounterTotal("drover.client.state_db.failed_commits",
                            static_cast<double>(st.failed));
  registry_.SetCounterTotal("drover.client.state_db.commit_seconds", st.commit_seconds);
  const uint64_t written = st.writes - st.deduplicated;
  sink.Set("drover.client.state_db.puts_per_commit",
           st.transactions == 0
               ? 0
               : static_cast<double>(written) / static_cast<double>(st.transactions));
}

void AgentMetrics::WatchHttp(const api::HttpServer& http, std::string listener) {
  registry_.AddCollector([&http, listener](GaugeSink& sink) {
    sink.Set("drover.http.connections", static_cast<double>(http.open_connections()),
             {{"listener", listener}});
  });
}

void AgentMetrics::Start() {
  if (client_ == nullptr || !config_.publish_node_metrics || stop_ != nullptr)
    return;
  stop_ = common::CancellationScope::Create(executor_);
  common::SpawnDetached(executor_, HostLoop(stop_), "metrics host stats");
}

void AgentMetrics::Stop() {
  if (stop_ != nullptr)
    stop_->Cancel();
}

asio::awaitable<void> AgentMetrics::HostLoop(common::CancellationScopePtr stop) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT
  client::HostStatsCollector& collector = *host_collector_;
  while (!stop->cancelled()) {
    auto work = [&collector] { return collector.Collect(); };  // named: see Offload()
    model::HostStats stats = co_await common::Offload(pool_, std::move(work));
    if (stop->cancelled())
      break;
    host_ = std::move(stats);
    co_await (clock_.Sleep(config_.stats_interval) || stop->Wait());
  }
}

}  // namespace drover::agent
