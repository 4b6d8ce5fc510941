// The node under load (make bench): a real dev agent and its supervisor and reaper.
//
//   burst_start  one registration of N single-task raw_exec allocations (`sleep`), time
//                until all run, against the same-run baseline of a loop that
//                posix_spawns the same N processes. value and baseline are starts/s;
//                target ratio >= 0.3.
//   density      the N running: RSS of the agent, the supervisor and the reaper (right
//                after the burst and again after the idle window; target <= 64 MiB
//                together), the non-task processes (the agent, the supervisor, the
//                reaper: 3, whatever N), their open fds and threads, and their CPU over
//                the idle window with the default 1 s stats (target <= 2 % of a core).
//   burst_stop   stopping those N: time until all are complete.
//   churn        C start/stop cycles (batch allocations of `true`, 50 per job, each job
//                purged once done and collected with PUT /v1/system/gc). Agent threads,
//                fds and RSS at the end against their values after the first 100
//                cycles: within 5 %.
//
// One JSON object per line: {"bench":"node","workload":..,"metric":..,"value":..,
// ["baseline":..,"ratio":..,]"target":..}.
// Usage: drover_node_bench --drover PATH [--tasks 1000] [--idle-seconds 60]
//                          [--churn 5000] [--skip-churn]
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
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

#include "cli/http_client.h"

#include "bench/bench_agent.h"
#include "codec/json.h"
#include "common/mounts.h"
#include "metrics/process_stats.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT
using drover::bench::Emit;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string ReadSmall(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s;
}

// The supervisor and reaper serving `dir` (their command lines name it).
std::vector<pid_t> NodeProcesses(const fs::path& dir) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (!std::all_of(name.begin(), name.end(), ::isdigit))
      continue;
    std::string comm = ReadSmall(e.path() / "comm");
    if (comm.rfind("drover-supervis", 0) != 0 && comm.rfind("drover-reaper", 0) != 0)
      continue;
    std::string cmdline = ReadSmall(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(dir.string()) != std::string::npos)
      out.push_back(std::stoi(name));
  }
  return out;
}

// The baseline: posix_spawn `n` sleeps, as fast as a loop can; seconds taken. They are
// killed and reaped afterwards (not timed).
double SpawnLoop(int n) {
  std::vector<pid_t> pids;
  char sleep_bin[] = "/bin/sleep";
  char arg[] = "100000";
  char* argv[] = {sleep_bin, arg, nullptr};
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    pid_t pid = 0;
    if (posix_spawn(&pid, sleep_bin, nullptr, nullptr, argv, environ) == 0)
      pids.push_back(pid);
  }
  const double took = Seconds(Clock::now() - start);
  for (pid_t p : pids)
    kill(p, SIGKILL);
  for (pid_t p : pids)
    waitpid(p, nullptr, 0);
  return took;
}

nlohmann::json TrueJob(const std::string& id, int count) {
  nlohmann::json j = drover::bench::SleepJob(id, count);
  j["Job"]["Type"] = "batch";
  j["Job"]["TaskGroups"][0]["Tasks"][0]["Config"] = {{"command", "/bin/true"}};
  j["Job"]["TaskGroups"][0]["RestartPolicy"] = {{"Attempts", 0}, {"Mode", "fail"}};
  return j;
}

// The job's group "g" summary field (Running, Complete, ...), or -1.
// How many of the job's allocations the client has reported healthy: the last thing a
// started service allocation reports (after the migrate block's min_healthy_time).
int Healthy(drover::cli::HttpClient& http, const std::string& job) {
  auto r = http.Do("GET", "/v1/job/" + job + "/allocations");
  auto j = r.ok() ? drover::codec::ParseJson(r->body) : absl::StatusOr<nlohmann::json>();
  if (!j.ok() || !j->is_array())
    return -1;
  int n = 0;
  for (const auto& a : *j) {
    const auto d = a.find("DeploymentStatus");
    n += d != a.end() && d->is_object() && d->value("Healthy", false);
  }
  return n;
}

int Summary(drover::cli::HttpClient& http, const std::string& job, const char* field) {
  auto r = http.Do("GET", "/v1/job/" + job + "/summary");
  if (!r.ok())
    return -1;
  auto j = drover::codec::ParseJson(r->body);
  if (!j.ok() || !j->contains("Summary"))
    return -1;
  return (*j)["Summary"]["g"].value(field, 0);
}

bool Register(drover::cli::HttpClient& http, const nlohmann::json& job) {
  auto reg = http.Do("PUT", "/v1/jobs", job.dump());
  if (!reg.ok() || reg->status != 200) {
    std::fprintf(stderr, "register failed: %s\n",
                 reg.ok() ? reg->body.c_str() : reg.status().ToString().c_str());
    return false;
  }
  return true;
}

struct Usage {
  uint64_t rss = 0;
  uint64_t rss_anon = 0;  // of rss: the heap and stacks, not mapped files

  uint64_t fds = 0;
  uint64_t threads = 0;
  double cpu = 0;
};

Usage Of(pid_t pid) {
  Usage u;
  if (auto s = drover::metrics::ReadProcessStats(pid); s.ok()) {
    u.rss = s->rss_bytes;
    u.fds = s->open_fds;
    u.threads = s->threads;
    u.cpu = s->cpu_seconds;
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("RssAnon:", 0) == 0)
      u.rss_anon = std::stoull(line.substr(8)) * 1024;
  }
  return u;
}

constexpr double kMiB = 1024.0 * 1024.0;

void EmitDensity(const char* when, pid_t agent, const std::vector<pid_t>& node, int tasks) {
  const Usage a = Of(agent);
  uint64_t node_rss = 0, node_fds = 0, node_threads = 0;
  for (pid_t p : node) {
    const Usage u = Of(p);
    node_rss += u.rss;
    node_fds += u.fds;
    node_threads += u.threads;
  }
  Emit({{"bench", "node"},
        {"workload", "density"},
        {"metric", std::string("rss_mib_") + when},
        {"value", (static_cast<double>(a.rss + node_rss)) / kMiB},
        {"agent_mib", static_cast<double>(a.rss) / kMiB},
        {"supervisor_and_reaper_mib", static_cast<double>(node_rss) / kMiB},
        {"target", 64},
        {"tasks", tasks}});
  Emit({{"bench", "node"},
        {"workload", "density"},
        {"metric", std::string("fds_threads_") + when},
        {"value", a.fds + node_fds},
        {"agent_fds", a.fds},
        {"agent_threads", a.threads},
        {"supervisor_and_reaper_fds", node_fds},
        {"supervisor_and_reaper_threads", node_threads},
        {"tasks", tasks}});
}

// The allocations the agent's client holds, or -1.
long ClientAllocs(drover::cli::HttpClient& http) {
  auto self = http.Do("GET", "/v1/agent/self");
  if (!self.ok())
    return -1;
  auto j = drover::codec::ParseJson(self->body);
  return j.ok() ? std::stol((*j)["stats"]["client"].value("num_allocations", "-1")) : -1;
}

// Sampled once the client has let go of the collected allocations, and the least of
// five samples 100 ms apart: what the agent holds, not what the collection of the last
// job has open for a moment (an HTTP connection, a mount table being read).
Usage Settled(drover::cli::HttpClient& http, pid_t agent) {
  (void)drover::bench::WaitUntil([&] { return ClientAllocs(http) == 0; }, 30s, 20ms);
  Usage least = Of(agent);
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(100ms);
    const Usage u = Of(agent);
    least.rss = std::min(least.rss, u.rss);
    least.rss_anon = std::min(least.rss_anon, u.rss_anon);
    least.fds = std::min(least.fds, u.fds);
    least.threads = std::min(least.threads, u.threads);
  }
  return least;
}

// Start/stop cycles; returns false if the agent stopped answering.
bool Churn(drover::cli::HttpClient& http, pid_t agent, int cycles) {
  constexpr int kPerJob = 50;
  std::optional<Usage> after_first_100;
  nlohmann::json rss_every_1000 = nlohmann::json::array();
  const auto settled = [&] { return Settled(http, agent); };
  const auto start = Clock::now();
  int done = 0;
  for (int j = 0; done < cycles; ++j) {
    const std::string id = "churn-" + std::to_string(j);
    const int n = std::min(kPerJob, cycles - done);
    if (!Register(http, TrueJob(id, n)))
      return false;
    if (!drover::bench::WaitUntil([&] { return Summary(http, id, "Complete") == n; }, 300s, 20ms)) {
      std::fprintf(stderr, "churn job %s did not complete\n", id.c_str());
      return false;
    }
    (void)http.Do("DELETE", "/v1/job/" + id + "?purge=true");
    // What finished goes now, not after eval_gc_threshold: the agent's steady state is
    // what is measured, not the servers' retention window.
    (void)http.Do("PUT", "/v1/system/gc");
    const int before = done;
    done += n;
    if (!after_first_100 && done >= 100)
      after_first_100 = settled();
    if (done / 1000 != before / 1000) {
      const Usage u = settled();
      rss_every_1000.push_back(
          {static_cast<double>(u.rss) / kMiB, static_cast<double>(u.rss_anon) / kMiB});
    }
  }
  const double took = Seconds(Clock::now() - start);
  const Usage end = settled();
  // What the agent still holds once each purged job's history was collected.
  const auto count = [&http](const std::string& path) -> long {
    auto r = http.Do("GET", path);
    auto j = r.ok() ? drover::codec::ParseJson(r->body) : absl::StatusOr<nlohmann::json>();
    return j.ok() && j->is_array() ? static_cast<long>(j->size()) : -1;
  };
  const auto pct = [](double now, double then) { return then > 0 ? 100 * (now - then) / then : 0; };
  Emit({{"bench", "node"},
        {"workload", "churn"},
        {"metric", "cycles_per_s"},
        {"value", cycles / took},
        {"cycles", cycles}});
  Emit({{"bench", "node"},
        {"workload", "churn"},
        {"metric", "growth_percent"},
        {"value",
         std::max({pct(static_cast<double>(end.rss), static_cast<double>(after_first_100->rss)),
                   pct(static_cast<double>(end.fds), static_cast<double>(after_first_100->fds)),
                   pct(static_cast<double>(end.threads),
                       static_cast<double>(after_first_100->threads))})},
        {"target", 5},
        {"rss_mib_after_100", static_cast<double>(after_first_100->rss) / kMiB},
        {"rss_mib_end", static_cast<double>(end.rss) / kMiB},
        {"fds_after_100", after_first_100->fds},
        {"fds_end", end.fds},
        {"threads_after_100", after_first_100->threads},
        {"threads_end", end.threads},
        {"server_allocs_end", count("/v1/allocations")},
        {"server_evals_end", count("/v1/evaluations")},
        {"client_allocs_end", ClientAllocs(http)},
        {"anon_mib_after_100", static_cast<double>(after_first_100->rss_anon) / kMiB},
        {"anon_mib_end", static_cast<double>(end.rss_anon) / kMiB},
        {"rss_and_anon_mib_every_1000_cycles", rss_every_1000},
        {"cycles", cycles}});
  return true;
}

// A new directory under `parent` for an agent's data, or nullopt (said on stderr).
std::optional<fs::path> MakeDataDir(const std::string& parent, const std::string& name) {
  std::string tmpl = parent + "/drover-nodebench-" + name + "XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp in %s: %s\n", parent.c_str(), std::strerror(errno));
    return std::nullopt;
  }
  return fs::path(tmpl);
}

// A dev agent stops its tasks on SIGTERM.
void StopAgent(pid_t agent, const fs::path& dir) {
  kill(agent, SIGTERM);
  waitpid(agent, nullptr, 0);
  (void)drover::common::UnmountUnder(dir);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Churn in an agent of its own: what the density run left in the first one's heap would
// otherwise be part of the after-100-cycles baseline.
bool ChurnInOwnAgent(const std::string& drover, const std::string& data_parent, int cycles) {
  const std::optional<fs::path> dir = MakeDataDir(data_parent, "churn-");
  if (!dir)
    return false;
  std::string addr;
  const pid_t agent = drover::bench::StartAgent(drover, *dir, addr);
  if (agent < 0)
    return false;
  auto http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + addr));
  const bool ok = Churn(*http, agent, cycles);
  StopAgent(agent, *dir);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string drover;
  int tasks = 1000;
  int idle_seconds = 60;
  int churn = 5000;
  std::string data_parent = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--drover" && i + 1 < argc)
      drover = argv[++i];
    else if (a == "--tasks" && i + 1 < argc)
      tasks = std::atoi(argv[++i]);
    else if (a == "--idle-seconds" && i + 1 < argc)
      idle_seconds = std::atoi(argv[++i]);
    else if (a == "--churn" && i + 1 < argc)
      churn = std::atoi(argv[++i]);
    else if (a == "--skip-churn")
      churn = 0;
    else if (a == "--data-parent" && i + 1 < argc)
      data_parent = argv[++i];
  }
  if (drover.empty()) {
    std::fprintf(stderr,
                 "usage: drover_node_bench --drover PATH [--tasks N] [--idle-seconds S] "
                 "[--churn C | --skip-churn] [--data-parent DIR]\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  const double baseline_s = SpawnLoop(tasks);
  const std::optional<fs::path> made = MakeDataDir(data_parent, "");
  if (!made)
    return 1;
  const fs::path dir = *made;
  std::string addr;
  pid_t agent = drover::bench::StartAgent(drover, dir, addr);
  if (agent < 0)
    return 1;
  auto http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + addr));
  int code = 1;
  // The CPU each Drover process spends on the burst: a steadier figure than the wall
  // time on a shared 2-core machine.
  const double agent_cpu_before = Of(agent).cpu;
  double node_cpu_before = 0;
  for (pid_t p : NodeProcesses(dir))
    node_cpu_before += Of(p).cpu;
  const auto registered = Clock::now();
  if (!Register(*http, drover::bench::SleepJob("density", tasks))) {
  } else if (!drover::bench::WaitUntil(
                 [&] { return Summary(*http, "density", "Running") == tasks; }, 900s, 20ms)) {
    std::fprintf(stderr, "the %d allocations did not all start\n", tasks);
  } else {
    const double start_s = Seconds(Clock::now() - registered);
    const std::vector<pid_t> node = NodeProcesses(dir);
    double burst_node_cpu = -node_cpu_before;
    for (pid_t p : node)
      burst_node_cpu += Of(p).cpu;
    Emit({{"bench", "node"},
          {"workload", "burst_start"},
          {"metric", "starts_per_s"},
          {"value", tasks / start_s},
          {"baseline", tasks / baseline_s},
          {"target", 0.3},
          {"seconds", start_s},
          {"baseline_seconds", baseline_s},
          {"agent_cpu_s", Of(agent).cpu - agent_cpu_before},
          {"supervisor_and_reaper_cpu_s", burst_node_cpu},
          {"tasks", tasks}});
    Emit({{"bench", "node"},
          {"workload", "density"},
          {"metric", "non_task_processes"},
          {"value", 1 + node.size()},
          {"target", "3 (agent, supervisor, reaper)"},
          {"tasks", tasks}});
    EmitDensity("after_burst", agent, node, tasks);
    // Idle means nothing left to report: every allocation's health is in (10 s after
    // it started) before the window opens.
    const auto settling = Clock::now();
    if (!drover::bench::WaitUntil([&] { return Healthy(*http, "density") == tasks; }, 300s,
                                  500ms)) {
      std::fprintf(stderr, "the %d allocations were not all reported healthy\n", tasks);
    }
    const double settle_s = Seconds(Clock::now() - settling);
    double cpu_before = Of(agent).cpu;
    double node_before = 0;
    for (pid_t p : node)
      node_before += Of(p).cpu;
    std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
    const double agent_cpu = Of(agent).cpu - cpu_before;
    double node_cpu = -node_before;
    for (pid_t p : node)
      node_cpu += Of(p).cpu;
    Emit({{"bench", "node"},
          {"workload", "density"},
          {"metric", "idle_cpu_percent"},
          {"value", 100 * (agent_cpu + node_cpu) / idle_seconds},
          {"agent_percent", 100 * agent_cpu / idle_seconds},
          {"supervisor_and_reaper_percent", 100 * node_cpu / idle_seconds},
          {"target", 2},
          {"idle_s", idle_seconds},
          {"settled_after_s", settle_s},
          {"tasks", tasks}});
    EmitDensity("after_idle", agent, node, tasks);
    const auto stop = Clock::now();
    (void)http->Do("DELETE", "/v1/job/density");
    if (drover::bench::WaitUntil([&] { return Summary(*http, "density", "Running") == 0; }, 600s,
                                 20ms)) {
      Emit({{"bench", "node"},
            {"workload", "burst_stop"},
            {"metric", "seconds"},
            {"value", Seconds(Clock::now() - stop)},
            {"kill_timeout_s", 5},
            {"tasks", tasks}});
      code = 0;
    } else {
      std::fprintf(stderr, "the %d allocations did not all stop\n", tasks);
    }
  }
  StopAgent(agent, dir);
  if (code != 0 || churn == 0)
    return code;
  return ChurnInOwnAgent(drover, data_parent, churn) ? 0 : 1;
}
