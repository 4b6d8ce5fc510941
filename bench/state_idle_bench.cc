// The `idle` workload of the state DB benchmark: a real dev agent runs N allocations
// (raw_exec `sleep`), is SIGKILLed and started again on the same data dir so that all
// of them are restored, settles, then sits idle. Over the idle window it must write
// nothing to its state DBs: no commits (LMDB transaction ids do not move) and no bytes.
//   {"bench":"state_store","workload":"idle","metric":"state_db_commits","value":0,...}
//   {"bench":"state_store","workload":"idle","metric":"agent_bytes_written",...}
// (the second is everything the agent process wrote to storage, its log included).
// Usage: drover_state_idle_bench --drover PATH [--allocs 1000] [--idle-seconds 60]
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli/http_client.h"
#include <lmdb.h>

#include "bench/bench_agent.h"
#include "codec/json.h"
#include "common/mounts.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT

namespace {

// The last committed transaction of an LMDB file, read without writing to it.
uint64_t LastTxn(const fs::path& file) {
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  uint64_t txn = 0;
  if (mdb_env_open(env, file.c_str(), MDB_NOSUBDIR | MDB_RDONLY, 0600) == 0) {
    MDB_envinfo info;
    mdb_env_info(env, &info);
    txn = info.me_last_txnid;
  }
  mdb_env_close(env);
  return txn;
}

uint64_t Commits(const fs::path& dir) {
  return LastTxn(dir / "client" / "state.db") + LastTxn(dir / "server" / "state.db");
}

// Bytes the process caused to be written to storage (/proc/PID/io write_bytes).
uint64_t WriteBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "write_bytes:")
      return value;
  }
  return 0;
}

int Running(drover::cli::HttpClient& http) {
  auto r = http.Do("GET", "/v1/job/idle/summary");
  if (!r.ok())
    return -1;
  auto j = drover::codec::ParseJson(r->body);
  if (!j.ok() || !j->contains("Summary"))
    return -1;
  return (*j)["Summary"]["g"].value("Running", 0);
}

bool WaitRunning(drover::cli::HttpClient& http, int n, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running(http) != n) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(500ms);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string drover;
  int allocs = 1000;
  int idle_seconds = 60;
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--drover")
      drover = argv[++i];
    else if (a == "--allocs")
      allocs = std::atoi(argv[++i]);
    else if (a == "--idle-seconds")
      idle_seconds = std::atoi(argv[++i]);
  }
  if (drover.empty()) {
    std::fprintf(stderr,
                 "usage: drover_state_idle_bench --drover PATH [--allocs N] [--idle-seconds S]\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/drover-idlebench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  int code = 1;
  std::string addr;
  pid_t agent = drover::bench::StartAgent(drover, dir, addr);
  if (agent < 0)
    return 1;
  auto http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + addr));
  const nlohmann::json job = drover::bench::SleepJob("idle", allocs);
  uint64_t settled_at = 0;
  uint64_t bytes_before = 0;
  if (auto reg = http->Do("PUT", "/v1/jobs", job.dump()); !reg.ok() || reg->status != 200) {
    std::fprintf(stderr, "register failed: %s\n",
                 reg.ok() ? reg->body.c_str() : reg.status().ToString().c_str());
  } else if (!WaitRunning(*http, allocs, 600s)) {
    std::fprintf(stderr, "the %d allocations did not all start\n", allocs);
  } else {
    // Every allocation is restored by the next agent.
    kill(agent, SIGKILL);
    waitpid(agent, nullptr, 0);
    const auto restart = std::chrono::steady_clock::now();
    agent = drover::bench::StartAgent(drover, dir, addr);
    if (agent > 0) {
      http = drover::cli::NewHttpClient(*drover::cli::ParseAddress("http://" + addr));
      if (WaitRunning(*http, allocs, 600s)) {
        const double restore_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - restart).count();
        drover::bench::Emit({{"bench", "state_store"},
                             {"workload", "idle"},
                             {"metric", "restart_to_all_running_s"},
                             {"value", restore_s},
                             {"allocs", allocs}});
        // Settled: no commit for 15 s in a row. The restored runners' first writes are
        // done, and so are the health reports (min_healthy_time is 10 s; the first
        // agent was killed before its allocations were reported healthy, so the second
        // one reports them, once).
        uint64_t last = Commits(dir);
        int quiet = 0;
        for (int s = 0; s < 180 && quiet < 15; ++s) {
          std::this_thread::sleep_for(1s);
          const uint64_t now = Commits(dir);
          quiet = now == last ? quiet + 1 : 0;
          last = now;
        }
        settled_at = last;
        bytes_before = WriteBytes(agent);
        std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
        const uint64_t commits = Commits(dir) - settled_at;
        const uint64_t bytes = WriteBytes(agent) - bytes_before;
        drover::bench::Emit({{"bench", "state_store"},
                             {"workload", "idle"},
                             {"metric", "state_db_commits"},
                             {"value", commits},
                             {"target", 0},
                             {"allocs", allocs},
                             {"idle_s", idle_seconds}});
        drover::bench::Emit({{"bench", "state_store"},
                             {"workload", "idle"},
                             {"metric", "agent_bytes_written"},
                             {"value", bytes},
                             {"target", 0},
                             {"allocs", allocs},
                             {"idle_s", idle_seconds}});
        code = 0;
      } else {
        std::fprintf(stderr, "the restored allocations did not all run again\n");
      }
    }
  }
  if (agent > 0) {
    // A dev agent stops its tasks on SIGTERM.
    kill(agent, SIGTERM);
    waitpid(agent, nullptr, 0);
  }
  // A task's secrets dir is a tmpfs (as root): never remove a tree with mounts in it.
  (void)drover::common::UnmountUnder(dir);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return code;
}
