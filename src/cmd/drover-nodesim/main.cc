// drover-nodesim: simulated client nodes for tests and benchmarks (docs/cluster.md).
//
// Registers N nodes with the servers through the real client protocol
// (rpc::RemoteServerRpc), heartbeats each at the TTL the servers give, and "runs" the
// allocations placed on them without starting a process: each is reported running at
// once, and a batch one complete after -batch-run; a share of them (-fail-percent,
// chosen by allocation ID) is reported failed instead. An allocation the servers stop
// is reported complete. Writes -ready-file once every node has registered, and runs
// until SIGINT or SIGTERM.
//
// For benchmarks: -stats-file PATH is rewritten every second with what the nodes saw
// ({"registered", "heartbeats", "heartbeat_p50_ms", "heartbeat_p99_ms",
// "heartbeat_max_ms", "running", "silenced"}: heartbeat round trips, allocations
// reported running now); SIGUSR1 silences the first -silence N nodes, which stop
// heartbeating and answering from then on, as machines that died.
//
//   drover-nodesim -servers 127.0.0.1:4647 -nodes 200 [-datacenter dc1] [-region global]
//                  [-name-prefix sim] [-fail-percent 0] [-batch-run-ms 1000]
//                  [-ready-file PATH] [-stats-file PATH] [-silence N]
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include <boost/asio/signal_set.hpp>

#include "common/clock.h"
#include "common/fds.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/offload.h"
#include "rpc/remote_server_rpc.h"

namespace drover {
namespace {

using namespace asio::experimental::awaitable_operators;  // NOLINT

struct Options {
  std::vector<std::string> servers;
  int nodes = 100;
  std::string datacenter = "dc1";
  std::string region = "global";
  std::string name_prefix = "sim";
  int fail_percent = 0;
  common::Duration batch_run = std::chrono::seconds(1);
  std::string ready_file;
  std::string stats_file;
  int silence = 0;
};

// What every node saw, for -stats-file (on the control loop; no locks).
struct Stats {
  int registered = 0;
  uint64_t heartbeats = 0;
  std::vector<double> latencies_ms;  // the latest heartbeats' round trips, a ring
  size_t next = 0;
  int64_t running = 0;
  int silenced = 0;
  void Heartbeat(double ms) {
    ++heartbeats;
    constexpr size_t kKept = 100'000;
    if (latencies_ms.size() < kKept) {
      latencies_ms.push_back(ms);
    } else {
      latencies_ms[next++ % kKept] = ms;
    }
  }
};

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    int64_t n = 0;
    if (flag == "-servers") {
      o.servers = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (flag == "-nodes" && absl::SimpleAtoi(value, &n) && n > 0 && n <= 100'000) {
      o.nodes = static_cast<int>(n);
    } else if (flag == "-datacenter") {
      o.datacenter = value;
    } else if (flag == "-region") {
      o.region = value;
    } else if (flag == "-name-prefix") {
      o.name_prefix = value;
    } else if (flag == "-fail-percent" && absl::SimpleAtoi(value, &n) && n >= 0 && n <= 100) {
      o.fail_percent = static_cast<int>(n);
    } else if (flag == "-batch-run-ms" && absl::SimpleAtoi(value, &n) && n >= 0) {
      o.batch_run = std::chrono::milliseconds(n);
    } else if (flag == "-ready-file") {
      o.ready_file = value;
    } else if (flag == "-stats-file") {
      o.stats_file = value;
    } else if (flag == "-silence" && absl::SimpleAtoi(value, &n) && n >= 0 && n <= 100'000) {
      o.silence = static_cast<int>(n);
    } else {
      std::fprintf(stderr, "drover-nodesim: bad flag or value: %s %s\n", flag.c_str(),
                   value.c_str());
      return false;
    }
  }
  if (argc % 2 == 0 || o.servers.empty()) {
    std::fprintf(stderr, "usage: drover-nodesim -servers host:port[,...] [-nodes N] ...\n");
    return false;
  }
  return true;
}

model::Node SimulatedNode(const Options& o, int index) {
  model::Node n;
  n.id = common::NewUuid();
  n.secret_id = common::NewUuid();
  n.name = o.name_prefix + "-" + std::to_string(index);
  n.datacenter = o.datacenter;
  n.http_addr = "";  // nothing to forward client calls to
  n.attributes = {{"kernel.name", "linux"},
                  {"os.name", "nodesim"},
                  {"unique.hostname", n.name},
                  {"cpu.arch", "amd64"}};
  n.node_resources.cpu_shares = 4000;
  n.node_resources.total_cores = 4;
  n.node_resources.memory_mb = 8192;
  n.node_resources.disk_mb = 100'000;
  for (const char* driver : {"raw_exec", "exec", "mock_driver"})
    n.drivers[driver] = model::DriverInfo{.detected = true, .healthy = true};
  return n;
}

// One simulated node: registration, heartbeats, and the allocations placed on it.
class SimNode {
 public:
  SimNode(asio::thread_pool& pool, common::Clock& clock, const Options& o, int index, Stats& stats)
      : clock_(clock),
        stats_(stats),
        options_(o),
        node_(SimulatedNode(o, index)),
        rpc_(pool, rpc::RemoteServerRpcOptions{.servers = o.servers, .region = o.region}) {}

  // Registers (retrying), counts itself in `registered`, then heartbeats and watches
  // its allocations until the process ends.
  asio::awaitable<void> Run(std::function<void()> on_registered) {
    common::Duration ttl;
    for (;;) {
      absl::StatusOr<common::Duration> r = co_await rpc_.RegisterNode(node_);
      if (r.ok()) {
        ttl = *r;
        break;
      }
      DROVER_LOG_WARN("nodesim: {}: {}", node_.name, r.status().ToString());
      co_await clock_.Sleep(std::chrono::seconds(1));
    }
    on_registered();
    co_await (Heartbeats(ttl) && Allocations());
  }

  // From now on the node neither heartbeats nor answers: a machine that died.
  void Silence() {
    if (silenced_)
      return;
    silenced_ = true;
    ++stats_.silenced;
    for (const auto& [id, status] : reported_)
      stats_.running -= status == model::kClientRunning ? 1 : 0;
  }

 private:
  asio::awaitable<void> Heartbeats(common::Duration ttl) {
    for (;;) {
      co_await clock_.Sleep(ttl);
      if (silenced_)
        co_return;
      const common::Time sent = clock_.Now();
      absl::StatusOr<common::Duration> r = co_await rpc_.Heartbeat(node_.id);
      stats_.Heartbeat(std::chrono::duration<double, std::milli>(clock_.Now() - sent).count());
      if (r.ok()) {
        ttl = *r;
      } else if (absl::IsNotFound(r.status())) {
        r = co_await rpc_.RegisterNode(node_);
        ttl = r.ok() ? *r : std::chrono::seconds(1);
      } else {
        ttl = std::chrono::seconds(1);
      }
    }
  }

  bool Fails(const std::string& alloc_id) const {
    return options_.fail_percent > 0 &&
           static_cast<int>(std::hash<std::string>{}(alloc_id) % 100) < options_.fail_percent;
  }

  model::AllocClientUpdate Update(const model::Allocation& a, const std::string& status) {
    model::AllocClientUpdate u{.id = a.id, .node_id = node_.id, .client_status = status};
    stats_.running += (status == model::kClientRunning ? 1 : 0) -
                      (reported_[a.id] == model::kClientRunning ? 1 : 0);
    const model::TaskGroup* g = a.Group();
    if (g == nullptr) {
      reported_[a.id] = status;
      return u;
    }
    for (const model::Task& t : g->tasks) {
      model::TaskState s;
      s.started_at = clock_.Now();
      s.state = status == model::kClientRunning ? model::kTaskStateRunning : model::kTaskStateDead;
      s.failed = status == model::kClientFailed;
      if (s.state == model::kTaskStateDead)
        s.finished_at = clock_.Now();
      u.task_states[t.name] = std::move(s);
    }
    reported_[a.id] = status;
    return u;
  }

  asio::awaitable<void> CompleteLater(std::shared_ptr<const model::Allocation> a) {
    co_await clock_.Sleep(options_.batch_run);
    if (silenced_ || reported_[a->id] != model::kClientRunning)
      co_return;
    std::vector<model::AllocClientUpdate> done = {Update(*a, model::kClientComplete)};
    (void)co_await rpc_.UpdateAllocations(std::move(done));
  }

  asio::awaitable<void> Allocations() {
    uint64_t index = 0;
    for (;;) {
      absl::StatusOr<client::NodeAllocations> got =
          co_await rpc_.GetNodeAllocations(node_.id, index, std::chrono::minutes(5));
      if (silenced_)
        co_return;
      if (!got.ok()) {
        co_await clock_.Sleep(std::chrono::seconds(1));
        continue;
      }
      index = got->index;
      std::vector<model::AllocClientUpdate> updates;
      for (const auto& a : got->allocs) {
        const std::string& was = reported_[a->id];
        if (a->desired_status == model::kDesiredRun && was.empty()) {
          const bool fails = Fails(a->id);
          updates.push_back(Update(*a, fails ? model::kClientFailed : model::kClientRunning));
          if (!fails && a->job && a->job->IsBatch()) {
            // Named first: no temporaries inside co_await expressions (GCC 12).
            asio::any_io_executor ex = co_await asio::this_coro::executor;
            asio::awaitable<void> later = CompleteLater(a);
            common::SpawnDetached(ex, std::move(later), "nodesim batch");
          }
        } else if (a->desired_status != model::kDesiredRun && was == model::kClientRunning) {
          updates.push_back(Update(*a, model::kClientComplete));
        }
      }
      if (!updates.empty())
        (void)co_await rpc_.UpdateAllocations(std::move(updates));
    }
  }

  common::Clock& clock_;
  Stats& stats_;
  const Options& options_;
  model::Node node_;
  rpc::RemoteServerRpc rpc_;
  std::map<std::string, std::string> reported_;  // allocation -> status reported
  bool silenced_ = false;
};

void WriteStats(const std::string& path, Stats& stats) {
  std::vector<double> sorted = stats.latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    return sorted.empty() ? 0.0 : sorted[static_cast<size_t>(p * (sorted.size() - 1))];
  };
  {
    std::ofstream out(path + ".tmp");
    out << "{\"registered\": " << stats.registered << ", \"heartbeats\": " << stats.heartbeats
        << ", \"heartbeat_p50_ms\": " << pct(0.5) << ", \"heartbeat_p99_ms\": " << pct(0.99)
        << ", \"heartbeat_max_ms\": " << (sorted.empty() ? 0.0 : sorted.back())
        << ", \"running\": " << stats.running << ", \"silenced\": " << stats.silenced << "}\n";
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

asio::awaitable<void> StatsWriter(common::Clock& clock, const std::string& path, Stats& stats) {
  for (;;) {
    co_await clock.Sleep(std::chrono::seconds(1));
    WriteStats(path, stats);
  }
}

int Main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options))
    return 2;
  common::InitLogging("warn");
  // A long poll and a heartbeat at a time per node.
  common::RaiseDescriptorLimit();
  asio::io_context io;
  asio::thread_pool pool(1);
  common::RealClock clock;
  std::vector<std::unique_ptr<SimNode>> nodes;
  Stats stats;
  auto on_registered = [&] {
    if (++stats.registered != options.nodes || options.ready_file.empty())
      return;
    { std::ofstream(options.ready_file + ".tmp") << stats.registered << "\n"; }
    std::rename((options.ready_file + ".tmp").c_str(), options.ready_file.c_str());
  };
  for (int i = 0; i < options.nodes; ++i) {
    nodes.push_back(std::make_unique<SimNode>(pool, clock, options, i, stats));
    common::SpawnDetached(io.get_executor(), nodes.back()->Run(on_registered), "nodesim node");
  }
  if (!options.stats_file.empty())
    common::SpawnDetached(io.get_executor(), StatsWriter(clock, options.stats_file, stats),
                          "nodesim stats");
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  asio::signal_set usr1(io, SIGUSR1);
  usr1.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec)
      return;
    for (int i = 0; i < options.silence && i < options.nodes; ++i)
      nodes[i]->Silence();
    if (!options.stats_file.empty())
      WriteStats(options.stats_file, stats);
  });
  io.run();
  pool.stop();
  pool.join();
  return 0;
}

}  // namespace
}  // namespace drover

int main(int argc, char** argv) {
  return drover::Main(argc, argv);
}
