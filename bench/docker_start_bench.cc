// Scenario benchmark: submit → Started of a one-task docker batch job through the HTTP
// API of a real agent, against a same-run baseline of the Engine API's own create +
// start of the same image and command. Both run a daemon of the benchmark's own
// (testing/dockerd_process.h) and the busybox test image, in network mode none. Prints
// one JSON object per result line:
//   {"bench":"docker_start","metric":"submit_to_started_ms_p50","value":..,"baseline":..,
//    "ratio":..}
// Usage: drover_docker_bench --drover PATH [--runs N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/http_client.h"

#include "bench/bench_agent.h"
#include "bench/submit_to_started.h"
#include "codec/json.h"
#include "drivers/docker/docker_test_util.h"
#include "drivers/docker/engine.h"
#include "testing/await.h"
#include "testing/dockerd_process.h"

namespace fs = std::filesystem;
using drover::drivers::docker::Engine;

namespace {

constexpr char kImage[] = "drover-test/busybox:1";

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// The baseline: create + start of a container, as the driver asks for it, timed from
// the create call to the start's answer; then removed.
double EngineStartMs(drover::asio::io_context& io, Engine& engine, int i) {
  const drover::codec::Json config = {
      {"Image", kImage}, {"Cmd", {"/bin/echo"}}, {"HostConfig", {{"NetworkMode", "none"}}}};
  const auto start = std::chrono::steady_clock::now();
  auto id = drover::testing::Await(io, engine.CreateContainer("base-" + std::to_string(i), config));
  if (!id.ok() || !drover::testing::Await(io, engine.StartContainer(*id)).ok())
    return -1;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  (void)drover::testing::Await(io, engine.WaitContainer(*id));
  (void)drover::testing::Await(io, engine.RemoveContainer(*id, true));
  return ms;
}

nlohmann::json Job(const std::string& id) {
  return {
      {"Job",
       {{"ID", id},
        {"Type", "batch"},
        {"Datacenters", {"dc1"}},
        {"TaskGroups",
         {{{"Name", "g"},
           {"Tasks",
            {{{"Name", "t"},
              {"Driver", "docker"},
              {"Config", {{"image", kImage}, {"command", "/bin/echo"}, {"network_mode", "none"}}},
              {"Resources", {{"CPU", 20}, {"MemoryMB", 16}}}}}}}}}}}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<drover::bench::StartBenchArgs> args =
      drover::bench::ParseStartBenchArgs(argc, argv, 50);
  if (!args)
    return 1;
  const std::string& drover = args->drover;
  const int runs = args->runs;
  signal(SIGPIPE, SIG_IGN);
  drover::testing::DockerdProcess dockerd;
  if (!dockerd.ok()) {
    std::fprintf(stderr, "dockerd did not start:\n%s\n", dockerd.Log().c_str());
    return 1;
  }
  drover::asio::io_context io;
  Engine engine(drover::drivers::docker::EndpointAddress(dockerd.endpoint()).value());
  drover::testing::TempDir dir;
  if (!drover::testing::Await(io, engine.Negotiate()).ok() ||
      !drover::drivers::docker::test::ImportBusybox(io, engine, dir).ok()) {
    std::fprintf(stderr, "cannot import the busybox image\n");
    return 1;
  }
  std::ofstream(dir.path() / "agent.hcl")
      << "plugin \"docker\" {\n  config {\n    endpoint = \"" << dockerd.endpoint()
      << "\"\n    gc {\n      image = false\n    }\n  }\n}\n";
  fs::create_directories(dir.path() / "agent");
  std::string addr;
  const pid_t agent = drover::bench::StartAgent(drover, dir.path() / "agent", addr,
                                                {"-config", (dir.path() / "agent.hcl").string()});
  if (agent < 0)
    return 1;
  auto http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + addr));
  // The node registers its docker driver once the first fingerprint has reached it.
  (void)drover::bench::WaitUntil(
      [&] {
        auto r = http->Do("GET", "/v1/nodes");
        return r.ok() && r->body.find("\"docker\"") != std::string::npos;
      },
      std::chrono::seconds(30));

  std::vector<double> drover_ms, engine_ms;
  for (int i = 0; i < runs; ++i) {
    // Interleaved, so that both see the daemon in the same state.
    if (const double ms = EngineStartMs(io, engine, i); ms > 0)
      engine_ms.push_back(ms);
    const std::string id = "docker-" + std::to_string(i);
    if (const double ms = drover::bench::SubmitToStartedMs(*http, id, Job(id)); ms > 0)
      drover_ms.push_back(ms);
  }
  drover::bench::Stop(agent);
  if (drover_ms.empty() || engine_ms.empty()) {
    std::fprintf(stderr, "no successful runs (agent log: %s)\n",
                 (dir.path() / "agent" / "agent.err").c_str());
    return 1;
  }
  for (const auto& [metric, p] :
       {std::pair{"submit_to_started_ms_p50", 0.5}, std::pair{"submit_to_started_ms_p90", 0.9}}) {
    drover::bench::Emit({{"bench", "docker_start"},
                         {"metric", metric},
                         {"value", Percentile(drover_ms, p)},
                         {"baseline", Percentile(engine_ms, p)},
                         {"runs", drover_ms.size()}});
  }
  return 0;
}
