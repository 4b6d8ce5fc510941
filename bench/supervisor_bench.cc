// Node supervisor benchmarks, against same-run baselines. One JSON object per line:
//   spawn_to_exit_ms_p50/p90: a `/bin/true` task through drover-supervisor (spawn
//     request to exit event, logs kept) vs posix_spawn + waitpid of the same binary;
//   spawn_rate_per_s: tasks started per second through the supervisor vs posix_spawn
//     (N `sleep` tasks, each with rotated logs);
//   rss_kib_per_task: the supervisor's resident memory growth per held task (baseline:
//     the RSS of one of the `sleep` tasks themselves, i.e. the least a per-task
//     executor process would cost).
// The supervisor runs as the agent runs it: under drover-reaper (next to it), which
// journals each exit before the supervisor hears of it.
// Usage: drover_supervisor_bench --supervisor PATH [--tasks N] [--runs N]
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor/client.h"

namespace fs = std::filesystem;
using drover::supervisor::Client;
using drover::supervisor::SpawnSpec;
using drover::supervisor::TaskInfo;

namespace {

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

void Emit(const std::string& metric, double value, double baseline) {
  nlohmann::ordered_json j = {{"bench", "supervisor"},
                              {"metric", metric},
                              {"value", value},
                              {"baseline", baseline},
                              {"ratio", baseline > 0 ? value / baseline : 0.0}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

long RssKib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atol(line.c_str() + 6);
  }
  return 0;
}

// Runs `op` on `io` to completion.
template <typename T>
T Await(boost::asio::io_context& io, boost::asio::awaitable<T> op) {
  std::optional<T> out;
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { out.emplace(co_await std::move(op)); },
      boost::asio::detached);
  while (!out.has_value() && io.run_one() > 0) {
  }
  return std::move(*out);
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string binary;
  int tasks = 200;
  int runs = 50;
  std::string data_parent = "/tmp";
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--supervisor")
      binary = argv[++i];
    else if (a == "--tasks")
      tasks = std::atoi(argv[++i]);
    else if (a == "--runs")
      runs = std::atoi(argv[++i]);
    else if (a == "--data-parent")
      data_parent = argv[++i];
  }
  if (binary.empty()) {
    std::fprintf(stderr,
                 "usage: drover_supervisor_bench --supervisor PATH [--tasks N] [--runs N] "
                 "[--data-parent DIR]\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // what the supervisor leaves behind comes back here
  std::string tmpl = data_parent + "/drover-sbench-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp in %s: %s\n", data_parent.c_str(), std::strerror(errno));
    return 1;
  }
  const fs::path dir = tmpl;
  fs::create_directories(dir / "logs");
  const fs::path sock = dir / "s.sock";
  fs::create_directories(dir / "state");
  const std::string journal = (dir / "state" / "exits.journal").string();
  const std::string reaper = (fs::path(binary).parent_path() / "drover-reaper").string();
  std::vector<std::string> args = {reaper,        "-journal",   journal,
                                   "--",          binary,       "-socket",
                                   sock.string(), "-state-dir", (dir / "state").string(),
                                   "-journal",    journal,      "-log-level",
                                   "warn"};
  std::vector<char*> cargs;
  for (auto& a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t reaper_pid = 0;
  if (posix_spawn(&reaper_pid, reaper.c_str(), nullptr, nullptr, cargs.data(), environ) != 0) {
    std::fprintf(stderr, "failed to start %s\n", reaper.c_str());
    return 1;
  }
  while (!fs::exists(sock) || !fs::exists(dir / "state" / "supervisor.pid"))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pid_t sup = 0;
  std::ifstream(dir / "state" / "supervisor.pid") >> sup;

  boost::asio::io_context io;
  Client client(io.get_executor());
  if (absl::Status s = Await(io, client.Connect(sock)); !s.ok()) {
    std::fprintf(stderr, "connect: %s\n", s.ToString().c_str());
    kill(reaper_pid, SIGKILL);
    kill(sup, SIGKILL);
    return 1;
  }
  std::vector<std::string> exited;
  client.on_exit = [&](const TaskInfo& t) { exited.push_back(t.task_id); };
  auto spec = [&](const std::string& id, std::vector<std::string> argv) {
    SpawnSpec s;
    s.task_id = id;
    s.argv = std::move(argv);
    s.cwd = dir.string();
    s.logs = {.dir = (dir / "logs").string(),
              .stdout_base = id + ".stdout",
              .stderr_base = id + ".stderr"};
    return s;
  };

  // 1. Latency of a short task, start to reported exit.
  std::vector<double> through, direct;
  for (int i = 0; i < runs; ++i) {
    const std::string id = "true-" + std::to_string(i);
    const auto start = std::chrono::steady_clock::now();
    auto r = Await(io, client.Spawn(spec(id, {"/bin/true"})));
    if (!r.ok()) {
      std::fprintf(stderr, "spawn: %s\n", r.status().ToString().c_str());
      break;
    }
    while (std::find(exited.begin(), exited.end(), id) == exited.end() && io.run_one() > 0) {
    }
    through.push_back(MsSince(start));
    (void)Await(io, client.AckExit(id));
    const auto b = std::chrono::steady_clock::now();
    char* bargv[] = {const_cast<char*>("/bin/true"), nullptr};
    pid_t pid = 0;
    posix_spawn(&pid, "/bin/true", nullptr, nullptr, bargv, environ);
    waitpid(pid, nullptr, 0);
    direct.push_back(MsSince(b));
  }
  if (!through.empty()) {
    Emit("spawn_to_exit_ms_p50", Percentile(through, 0.5), Percentile(direct, 0.5));
    Emit("spawn_to_exit_ms_p90", Percentile(through, 0.9), Percentile(direct, 0.9));
  }

  // 2. Density: N long-running tasks held at once.
  const long rss_before = RssKib(sup);
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> pids;
  for (int i = 0; i < tasks; ++i) {
    auto r = Await(io, client.Spawn(spec("sleep-" + std::to_string(i), {"/bin/sleep", "600"})));
    if (!r.ok()) {
      std::fprintf(stderr, "spawn: %s\n", r.status().ToString().c_str());
      break;
    }
    pids.push_back(r->pid);
  }
  const double spawn_s = MsSince(start) / 1000.0;
  const long rss_after = RssKib(sup);
  const long task_rss = pids.empty() ? 0 : RssKib(pids[0]);
  // Baseline rate: the same number of plain posix_spawns of the same command.
  std::vector<pid_t> plain;
  const auto b = std::chrono::steady_clock::now();
  for (int i = 0; i < tasks; ++i) {
    char* bargv[] = {const_cast<char*>("/bin/sleep"), const_cast<char*>("600"), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, "/bin/sleep", nullptr, nullptr, bargv, environ) == 0)
      plain.push_back(pid);
  }
  const double plain_s = MsSince(b) / 1000.0;
  for (pid_t p : plain) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
  if (!pids.empty()) {
    // Higher is better for a rate: report it so that the ratio reads "fraction of raw".
    Emit("spawn_rate_per_s", static_cast<double>(pids.size()) / spawn_s,
         static_cast<double>(plain.size()) / plain_s);
    Emit("rss_kib_per_task",
         static_cast<double>(rss_after - rss_before) / static_cast<double>(pids.size()),
         static_cast<double>(task_rss));
  }

  for (int pid : pids)
    kill(pid, SIGKILL);
  kill(reaper_pid, SIGTERM);  // passed to the supervisor; the reaper follows
  waitpid(reaper_pid, nullptr, 0);
  // Anything left comes back to us (subreaper): reap.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    const pid_t r = waitpid(-1, nullptr, WNOHANG);
    if (r < 0)
      break;  // no children left
    if (r == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
