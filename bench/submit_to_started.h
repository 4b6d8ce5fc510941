// Shared by the start benchmarks: submit a one-task job through the HTTP API and time
// it to the task's Started event (the time the agent recorded), then purge the job.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "cli/http_client.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::bench {

// `--drover PATH [--runs N]`, as the start benchmarks take them; nullopt (with the usage
// on stderr) without --drover.
struct StartBenchArgs {
  std::string drover;
  int runs = 0;
};
inline std::optional<StartBenchArgs> ParseStartBenchArgs(int argc, char** argv, int default_runs) {
  StartBenchArgs args{.runs = default_runs};
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--drover")
      args.drover = argv[++i];
    else if (a == "--runs")
      args.runs = std::atoi(argv[++i]);
  }
  if (args.drover.empty() || args.runs < 1) {
    std::fprintf(stderr, "usage: %s --drover PATH [--runs N]\n", argv[0]);
    return std::nullopt;
  }
  return args;
}

// Milliseconds from the PUT to task "t"'s Started event; -1 when it did not start
// within a minute or the API failed.
inline double SubmitToStartedMs(cli::HttpClient& http, const std::string& id,
                                const nlohmann::json& job) {
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t submitted = now_ns();
  if (!http.Do("PUT", "/v1/jobs", job.dump()).ok())
    return -1;
  uint64_t index = 0;
  int64_t started = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (started == 0 && std::chrono::steady_clock::now() < deadline) {
    auto r = http.Do("GET",
                     "/v1/job/" + id + "/allocations?index=" + std::to_string(index) + "&wait=10s");
    if (!r.ok())
      break;
    index = r->index;
    auto allocs = codec::ParseJson(r->body);
    if (!allocs.ok() || allocs->empty())
      continue;
    const auto& states = (*allocs)[0]["TaskStates"];
    if (!states.is_object() || !states.contains("t"))
      continue;
    for (const auto& e : states["t"]["Events"]) {
      if (e["Type"] == "Started")
        started = e["Time"].get<int64_t>();
    }
  }
  (void)http.Do("DELETE", "/v1/job/" + id + "?purge=true");
  return started > 0 ? static_cast<double>(started - submitted) / 1e6 : -1;
}

}  // namespace drover::bench
