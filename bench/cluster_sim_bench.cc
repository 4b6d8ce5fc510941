// A real server agent and 5,000 simulated nodes (drover-nodesim) heartbeating and
// long-polling through the client protocol on 127.0.0.1. Measures, in order:
//   steady     the server's CPU share with 5,000 idle nodes (30 s), and the nodes'
//              heartbeat round trips (p50/p99/max);
//   place      from registering 20 service jobs x 1,000 allocations to the server
//              seeing all 20,000 reported running, and the server's CPU share then;
//   node_down  after 500 nodes stop heartbeating (SIGUSR1 to drover-nodesim): until
//              the server marks all 500 down, and until their allocations' replacements
//              are reported running (20,000 again).
// One JSON object per line: {"bench":"cluster_sim","metric":..,"value":..,...}.
// Target (issue 17): the server stays under one core at steady state.
//
//   drover_cluster_sim_bench --drover PATH --nodesim PATH [--nodes 5000]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/http_client.h"
#include <nlohmann/json.hpp>

#include "bench/bench_agent.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using drover::bench::Emit;
using drover::bench::Spawn;
using drover::bench::Stop;
using drover::bench::WaitUntil;

// The process's user + system CPU seconds (/proc/PID/stat).
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14)
      utime = std::stol(field);
    if (i == 15)
      stime = std::stol(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  }
  return 0;
}

nlohmann::json ReadJson(const fs::path& p) {
  std::ifstream in(p);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

// Allocations the server sees running, over every job (the list's JobSummary).
int64_t Running(drover::cli::HttpClient& http) {
  auto r = http.Do("GET", "/v1/jobs");
  if (!r.ok())
    return -1;
  nlohmann::json jobs = nlohmann::json::parse(r->body, nullptr, false);
  int64_t n = 0;
  for (const auto& j : jobs) {
    for (const auto& [group, s] : j["JobSummary"]["Summary"].items())
      n += s.value("Running", 0);
  }
  return n;
}

int64_t DownNodes(drover::cli::HttpClient& http) {
  auto r = http.Do("GET", "/v1/nodes");
  if (!r.ok())
    return -1;
  int64_t n = 0;
  for (const auto& node : nlohmann::json::parse(r->body, nullptr, false))
    n += node["Status"] == "down" ? 1 : 0;
  return n;
}

std::string Job(int i, int count) {
  nlohmann::json job = {{"ID", "sim-" + std::to_string(i)},
                        {"Type", "service"},
                        {"Datacenters", {"dc1"}},
                        {"TaskGroups",
                         {{{"Name", "g"},
                           {"Count", count},
                           {"Tasks",
                            {{{"Name", "t"},
                              {"Driver", "mock_driver"},
                              {"Config", {{"run_for", "1h"}}},
                              {"Resources", {{"CPU", 100}, {"MemoryMB", 64}}}}}}}}}};
  return nlohmann::json({{"Job", job}}).dump();
}

// One run: the server, the simulated nodes, and what the phases share.
struct Sim {
  fs::path dir;
  int nodes = 0;
  int silence = 0;        // nodes that die in the last phase
  int64_t want = 0;       // allocations that must run
  double register_s = 0;  // until every node registered
  pid_t server = -1;
  pid_t sim = -1;
  std::unique_ptr<drover::cli::HttpClient> http;
};

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Starts the server agent and the simulated nodes; the error, or "".
std::string Start(Sim& s, const std::string& drover, const std::string& nodesim) {
  std::ofstream(s.dir / "server.hcl") << "limits {\n  rpc_max_conns_per_client = 0\n}\n";
  s.server = Spawn(
      {drover, "agent", "-server", "-data-dir", (s.dir / "server").string(), "-http-port", "0",
       "-rpc-port", "0", "-config", (s.dir / "server.hcl").string(), "-log-level", "warn"},
      s.dir / "server.out", s.dir / "server.err");
  if (!WaitUntil([&] { return fs::exists(s.dir / "server" / "rpc.addr"); },
                 std::chrono::seconds(60)))
    return "the server did not start";
  std::string http_addr;
  std::string rpc_addr;
  std::ifstream(s.dir / "server" / "http.addr") >> http_addr;
  std::ifstream(s.dir / "server" / "rpc.addr") >> rpc_addr;
  s.http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + http_addr));
  const auto start = Clock::now();
  s.sim = Spawn({nodesim, "-servers", rpc_addr, "-nodes", std::to_string(s.nodes), "-ready-file",
                 (s.dir / "sim.ready").string(), "-stats-file", (s.dir / "sim.json").string(),
                 "-silence", std::to_string(s.silence)},
                s.dir / "sim.out", s.dir / "sim.err");
  if (!WaitUntil([&] { return fs::exists(s.dir / "sim.ready"); }, std::chrono::seconds(300)))
    return "the simulated nodes did not all register";
  s.register_s = Since(start);
  return "";
}

// Steady state: every node registered, heartbeating at the TTL it was given.
void Steady(const Sim& s) {
  const double cpu0 = CpuSeconds(s.server);
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(30));  // the window measured
  const double share = (CpuSeconds(s.server) - cpu0) / Since(t0);
  const nlohmann::json stats = ReadJson(s.dir / "sim.json");
  Emit({{"bench", "cluster_sim"},
        {"metric", "steady_server_cpu_share"},
        {"nodes", s.nodes},
        {"value", share},
        {"target", 1.0},
        {"register_s", s.register_s},
        {"server_rss_mib", RssKib(s.server) / 1024.0},
        {"heartbeats", stats.value("heartbeats", 0)},
        {"heartbeat_p50_ms", stats.value("heartbeat_p50_ms", 0.0)},
        {"heartbeat_p99_ms", stats.value("heartbeat_p99_ms", 0.0)},
        {"heartbeat_max_ms", stats.value("heartbeat_max_ms", 0.0)}});
}

// Placement: 20 jobs x 1,000 allocations until all run; the error, or "".
std::string Place(const Sim& s, int jobs, int count) {
  const double cpu0 = CpuSeconds(s.server);
  const auto t0 = Clock::now();
  for (int i = 0; i < jobs; ++i) {
    auto r = s.http->Do("PUT", "/v1/jobs", Job(i, count));
    if (!r.ok())
      return "registering a job: " + std::string(r.status().message());
  }
  if (!WaitUntil([&] { return Running(*s.http) >= s.want; }, std::chrono::seconds(600)))
    return "not every allocation ran";
  const double place_s = Since(t0);
  Emit({{"bench", "cluster_sim"},
        {"metric", "time_to_running_s"},
        {"nodes", s.nodes},
        {"allocations", s.want},
        {"value", place_s},
        {"server_cpu_share", (CpuSeconds(s.server) - cpu0) / place_s},
        {"server_rss_mib", RssKib(s.server) / 1024.0}});
  return "";
}

// A tenth of the nodes die: until they are down, and until their work runs again.
std::string NodesDie(const Sim& s) {
  kill(s.sim, SIGUSR1);
  const auto t0 = Clock::now();
  const double cpu0 = CpuSeconds(s.server);
  if (!WaitUntil([&] { return DownNodes(*s.http) >= s.silence; }, std::chrono::seconds(600)))
    return "the silent nodes were not all marked down";
  const double down_s = Since(t0);
  if (!WaitUntil([&] { return Running(*s.http) >= s.want; }, std::chrono::seconds(600)))
    return "the lost allocations were not all replaced";
  const double replaced_s = Since(t0);
  const nlohmann::json stats = ReadJson(s.dir / "sim.json");
  Emit({{"bench", "cluster_sim"},
        {"metric", "node_down_detected_s"},
        {"nodes", s.nodes},
        {"silenced", s.silence},
        {"value", down_s},
        {"replaced_running_s", replaced_s},
        {"server_cpu_share", (CpuSeconds(s.server) - cpu0) / replaced_s},
        {"heartbeat_p99_ms", stats.value("heartbeat_p99_ms", 0.0)}});
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string drover;
  std::string nodesim;
  Sim s;
  s.nodes = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--drover")
      drover = argv[i + 1];
    else if (flag == "--nodesim")
      nodesim = argv[i + 1];
    else if (flag == "--nodes")
      s.nodes = std::atoi(argv[i + 1]);
  }
  if (drover.empty() || nodesim.empty() || s.nodes < 10) {
    std::fprintf(stderr, "usage: %s --drover PATH --nodesim PATH [--nodes N]\n", argv[0]);
    return 2;
  }
  const int jobs = 20;
  const int count = 1000;
  s.silence = s.nodes / 10;
  s.want = static_cast<int64_t>(jobs) * count;
  s.dir = fs::temp_directory_path() / ("drover-cluster-sim-" + std::to_string(getpid()));
  fs::create_directories(s.dir);
  std::string error = Start(s, drover, nodesim);
  if (error.empty()) {
    Steady(s);
    error = Place(s, jobs, count);
  }
  if (error.empty())
    error = NodesDie(s);
  Stop(s.sim);
  Stop(s.server);
  if (!error.empty()) {
    std::fprintf(stderr, "cluster_sim: %s (logs in %s)\n", error.c_str(), s.dir.c_str());
    return 1;
  }
  std::error_code ec;
  fs::remove_all(s.dir, ec);
  return 0;
}
