// Scheduler throughput and packing, in process with no network: the embedded server
// (state store, evaluation worker, scheduler passes on a one-thread pool) places 100
// service jobs of 1,000 allocations each, of mixed sizes, on 500 and on 5,000 nodes.
//
// One JSON object per line:
//   {"bench":"scheduler","nodes":N,"placements":..,"metric":"placements_per_s",
//    "value":..,"cpu_s":..,"wall_s":..,"bytes_per_alloc":..,"nodes_used":..,
//    "nodes_needed":..,"packing":..,"target":..}
//   {"bench":"scheduler","metric":"cost_ratio_5000_vs_500","value":..,"target":2}
//   {"bench":"scheduler","metric":"naive_ratio","nodes":5000,"value":..}
// placements_per_s is per CPU second of the whole process (the control loop and the
// pool's one thread take turns, so that is one core). bytes_per_alloc is the heap the
// server holds per placed allocation (glibc's mallinfo2). packing is nodes used over
// the fewest nodes the allocations' CPU and memory could fit on (1.0 is perfect).
// naive_ratio is the cost per placement of scoring every feasible node (Nomad's
// behaviour without its LimitIterator) over ours, on 5 of the jobs.
// Targets (issue 17): >= 3,750 placements/s at 5,000 nodes; cost per placement at
// 5,000 nodes <= 2x the cost at 500.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/asio.h"
#include "common/clock.h"
#include "server/server.h"

namespace {

using drover::model::Job;
using drover::model::Node;

constexpr int64_t kNodeCpu = 64'000;      // MHz
constexpr int64_t kNodeMem = 256 * 1024;  // MB

double CpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(r.ru_utime) + secs(r.ru_stime);
}

Node MakeNode(int i) {
  Node n;
  n.id = "node-" + std::to_string(i);
  n.secret_id = "secret-" + std::to_string(i);
  n.name = n.id;
  n.datacenter = "dc1";
  n.attributes = {{"kernel.name", "linux"}, {"unique.hostname", n.id}};
  n.node_resources.cpu_shares = kNodeCpu;
  n.node_resources.memory_mb = kNodeMem;
  n.node_resources.disk_mb = 2'000'000;
  n.drivers["raw_exec"] = drover::model::DriverInfo{.detected = true, .healthy = true};
  return n;
}

// Mixed sizes: CPU 50-400 MHz and memory 64-512 MB across the jobs.
Job MakeJob(int i, int count) {
  Job j;
  j.id = "job-" + std::to_string(i);
  j.name = j.id;
  j.type = "service";
  j.datacenters = {"dc1"};
  drover::model::TaskGroup g;
  g.name = "g";
  g.count = count;
  drover::model::Task t;
  t.name = "t";
  t.driver = "raw_exec";
  t.resources.cpu = std::array{50, 100, 200, 400}[i % 4];
  t.resources.memory_mb = std::array{64, 128, 256, 512}[(i / 4) % 4];
  g.tasks.push_back(t);
  j.task_groups.push_back(g);
  return j;
}

struct Result {
  size_t placements = 0;
  double cpu_s = 0;
  double wall_s = 0;
  double bytes_per_alloc = 0;
  size_t nodes_used = 0;
  size_t nodes_needed = 0;
};

Result Run(int nodes, int jobs, int count, bool naive) {
  drover::asio::io_context io;
  drover::asio::thread_pool pool(1);
  drover::common::FakeClock clock;  // no heartbeat ever expires
  drover::server::ServerConfig config;
  config.score_every_node = naive;
  Result r;
  {
    drover::server::Server server(io.get_executor(), pool, clock, config);
    server.Start();
    for (int i = 0; i < nodes; ++i) {
      if (!server.RegisterNode(MakeNode(i)).ok())
        std::abort();
    }
    io.poll();
    const size_t heap_before = mallinfo2().uordblks;
    const double cpu0 = CpuSeconds();
    const auto wall0 = std::chrono::steady_clock::now();
    for (int i = 0; i < jobs; ++i) {
      if (!server.RegisterJob(MakeJob(i, count)).ok())
        std::abort();
    }
    auto busy = [&] {
      for (const auto& e : server.state().ListEvals("*", "")) {
        if (e->status == drover::model::kEvalPending)
          return true;
      }
      return false;
    };
    while (busy())
      io.run_for(std::chrono::milliseconds(1));
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    r.cpu_s = CpuSeconds() - cpu0;
    std::set<std::string> used;
    int64_t cpu = 0;
    int64_t mem = 0;
    for (const auto& a : server.state().ListAllocs("*", "")) {
      ++r.placements;
      used.insert(a->node_id);
      for (const auto& [name, t] : a->allocated_resources.tasks) {
        cpu += t.cpu_shares;
        mem += t.memory_mb;
      }
    }
    r.bytes_per_alloc =
        static_cast<double>(mallinfo2().uordblks - heap_before) / static_cast<double>(r.placements);
    r.nodes_used = used.size();
    r.nodes_needed = static_cast<size_t>(std::ceil(
        std::max(static_cast<double>(cpu) / kNodeCpu, static_cast<double>(mem) / kNodeMem)));
    server.Stop();
    io.restart();
    io.poll();
  }
  pool.join();
  return r;
}

void Print(int nodes, const Result& r, std::optional<double> target) {
  nlohmann::json j = {{"bench", "scheduler"},
                      {"nodes", nodes},
                      {"placements", r.placements},
                      {"metric", "placements_per_s"},
                      {"value", std::round(r.placements / r.cpu_s)},
                      {"cpu_s", r.cpu_s},
                      {"wall_s", r.wall_s},
                      {"bytes_per_alloc", std::round(r.bytes_per_alloc)},
                      {"nodes_used", r.nodes_used},
                      {"nodes_needed", r.nodes_needed},
                      {"packing", static_cast<double>(r.nodes_used) / r.nodes_needed}};
  if (target)
    j["target"] = *target;
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3) {
    // One run, for profiling: drover_scheduler_bench NODES JOBS.
    const int nodes = std::atoi(argv[1]);
    Print(nodes, Run(nodes, std::atoi(argv[2]), 1000, false), std::nullopt);
    return 0;
  }
  const Result small = Run(500, 100, 1000, false);
  Print(500, small, std::nullopt);
  const Result large = Run(5000, 100, 1000, false);
  Print(5000, large, 3750);
  const double cost_small = small.cpu_s / small.placements;
  const double cost_large = large.cpu_s / large.placements;
  std::printf("%s\n", nlohmann::json({{"bench", "scheduler"},
                                      {"metric", "cost_ratio_5000_vs_500"},
                                      {"value", cost_large / cost_small},
                                      {"target", 2}})
                          .dump()
                          .c_str());
  const Result ours = Run(5000, 5, 1000, false);
  const Result naive = Run(5000, 5, 1000, true);
  std::printf(
      "%s\n",
      nlohmann::json({{"bench", "scheduler"},
                      {"metric", "naive_ratio"},
                      {"nodes", 5000},
                      {"placements", naive.placements},
                      {"value", (naive.cpu_s / naive.placements) / (ours.cpu_s / ours.placements)},
                      {"naive_packing", static_cast<double>(naive.nodes_used) / naive.nodes_needed},
                      {"packing", static_cast<double>(ours.nodes_used) / ours.nodes_needed}})
          .dump()
          .c_str());
  return 0;
}
