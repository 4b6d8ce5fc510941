// Scenario benchmark: start-to-running latency of a one-task raw_exec batch job
// submitted through the HTTP API, against a same-run baseline that spawns the same
// command directly (posix_spawn + waitpid). Prints one JSON object per result line:
//   {"bench":"task_start","metric":"start_to_running_ms_p50","value":..,"baseline":..,
//    "ratio":..}
// Usage: drover_bench --drover PATH [--runs N]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/http_client.h"
#include <nlohmann/json.hpp>

#include "bench/bench_agent.h"
#include "bench/submit_to_started.h"
#include "codec/json.h"

namespace fs = std::filesystem;

namespace {

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double SpawnBaselineMs(const char* path) {
  const auto start = std::chrono::steady_clock::now();
  char* argv[] = {const_cast<char*>(path), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, path, nullptr, nullptr, argv, environ) != 0)
    return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void Emit(const std::string& bench, const std::string& metric, double value, double baseline) {
  nlohmann::ordered_json j = {{"bench", bench},
                              {"metric", metric},
                              {"value", value},
                              {"baseline", baseline},
                              {"ratio", baseline > 0 ? value / baseline : 0.0}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<drover::bench::StartBenchArgs> args =
      drover::bench::ParseStartBenchArgs(argc, argv, 20);
  if (!args)
    return 1;
  const std::string& drover = args->drover;
  const int runs = args->runs;
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/drover-bench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);

  // The agent under test.
  std::string addr;
  const pid_t agent = drover::bench::StartAgent(drover, dir, addr);
  if (agent < 0)
    return 1;
  auto http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + addr));

  std::vector<double> latencies;
  for (int i = 0; i < runs; ++i) {
    const std::string id = "bench-" + std::to_string(i);
    nlohmann::json job = {{"Job",
                           {{"ID", id},
                            {"Type", "batch"},
                            {"Datacenters", {"dc1"}},
                            {"TaskGroups",
                             {{{"Name", "g"},
                               {"Tasks",
                                {{{"Name", "t"},
                                  {"Driver", "raw_exec"},
                                  {"Config", {{"command", "/bin/true"}}},
                                  {"Resources", {{"CPU", 20}, {"MemoryMB", 16}}}}}}}}}}}};
    if (const double ms = drover::bench::SubmitToStartedMs(*http, id, job); ms > 0)
      latencies.push_back(ms);
  }

  std::vector<double> baseline;
  for (int i = 0; i < runs; ++i)
    baseline.push_back(SpawnBaselineMs("/bin/true"));

  kill(agent, SIGTERM);
  int status = 0;
  waitpid(agent, &status, 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (latencies.empty()) {
    std::fprintf(stderr, "no successful runs\n");
    return 1;
  }
  Emit("task_start", "start_to_running_ms_p50", Percentile(latencies, 0.5),
       Percentile(baseline, 0.5));
  Emit("task_start", "start_to_running_ms_p90", Percentile(latencies, 0.9),
       Percentile(baseline, 0.9));
  return 0;
}
