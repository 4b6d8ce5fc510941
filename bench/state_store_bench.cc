// Client state DB write path: our LMDB store (dedup + group commit) against the same
// store with both turned off (one transaction and one sync per put), in the same run.
// Values are 4 KiB, keyed like allocations, and every writer waits for durability, as a
// runner persisting its state does. Each figure is the median of three alternating runs. One JSON
// object per line:
//   {"bench":"state_store","workload":..,"metric":"ops_per_s","value":..,"baseline":..,
//    "ratio":..,"target":..}
// plus "syncs_per_op" (lower is better) and, for `concurrent`, "puts_per_sync".
// Workloads (targets from the issue):
//   dup         one writer rewriting one allocation unchanged          ratio >= 100
//   unique      one writer writing new values                          ratio >= 0.9
//   concurrent  64 writers writing new values                          ratio >= 10,
//                                                                      >= 20 puts/sync
// The `idle` workload (1,000 restored allocations, 60 s idle, 0 bytes written) needs a
// real agent: bench/state_idle_bench.cc.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "state/lmdb_backend.h"
#include "state/store.h"

namespace fs = std::filesystem;
using drover::state::Store;
using drover::state::StoreOptions;

namespace {

struct Workload {
  const char* name;
  int writers;
  int puts_per_writer;
  bool unchanged;
  double target_ratio;
};

struct Result {
  double ops_per_s = 0;
  double syncs_per_op = 0;
  double commit_share = 0;  // of the wall time, spent committing
};

Result Run(const fs::path& dir, StoreOptions options, const Workload& w) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  auto backend = drover::state::OpenLmdb(dir / "state.db");
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    std::exit(1);
  }
  Store store(std::move(*backend), options);
  auto put = [&store](const std::string& key, const std::string& value) {
    std::promise<void> done;
    store.Put(key, value, [&done](absl::Status) { done.set_value(); });
    done.get_future().wait();
  };
  // Every allocation exists once before the measured part.
  for (int i = 0; i < w.writers; ++i)
    put("allocations/alloc-" + std::to_string(i) + "/alloc", std::string(4096, 'a'));
  const uint64_t txns_before = store.stats().transactions;
  const double commit_before = store.stats().commit_seconds;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> writers;
  for (int i = 0; i < w.writers; ++i) {
    writers.emplace_back([&put, &w, i] {
      const std::string key = "allocations/alloc-" + std::to_string(i) + "/alloc";
      for (int n = 0; n < w.puts_per_writer; ++n) {
        std::string value(4096, 'a');
        if (!w.unchanged)
          value.replace(0, 16, std::to_string(n) + "-" + std::to_string(i));
        put(key, value);
      }
    });
  }
  for (auto& t : writers)
    t.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ops = static_cast<double>(w.writers) * w.puts_per_writer;
  return Result{ops / secs, static_cast<double>(store.stats().transactions - txns_before) / ops,
                (store.stats().commit_seconds - commit_before) / secs};
}

constexpr int kRepeats = 3;

Result Median(std::vector<Result> runs) {
  std::sort(runs.begin(), runs.end(),
            [](const Result& a, const Result& b) { return a.ops_per_s < b.ops_per_s; });
  return runs[runs.size() / 2];
}

void Emit(const std::string& workload, const std::string& metric, double value, double baseline,
          double target) {
  nlohmann::ordered_json j = {{"bench", "state_store"},
                              {"workload", workload},
                              {"metric", metric},
                              {"value", value},
                              {"baseline", baseline}};
  if (baseline > 0)
    j["ratio"] = value / baseline;
  if (target > 0)
    j["target"] = target;
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/drover-statebench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const Workload workloads[] = {
      {"dup", 1, 2000, true, 100},
      {"unique", 1, 500, false, 0.9},
      {"concurrent", 64, 25, false, 10},
  };
  for (const Workload& w : workloads) {
    // Ours and the baseline alternate, three runs each; the median run of each counts
    // (this VM's disk is noisy from one second to the next).
    std::vector<Result> ours_runs;
    std::vector<Result> base_runs;
    for (int i = 0; i < kRepeats; ++i) {
      ours_runs.push_back(Run(dir / "ours", StoreOptions{}, w));
      base_runs.push_back(Run(dir / "base", StoreOptions{.dedup = false, .batch = false}, w));
    }
    const Result ours = Median(ours_runs);
    const Result base = Median(base_runs);
    Emit(w.name, "ops_per_s", ours.ops_per_s, base.ops_per_s, w.target_ratio);
    Emit(w.name, "syncs_per_op", ours.syncs_per_op, base.syncs_per_op, 0);
    Emit(w.name, "commit_share", ours.commit_share, base.commit_share, 0);
    if (std::string(w.name) == "concurrent" && ours.syncs_per_op > 0)
      Emit(w.name, "puts_per_sync", 1 / ours.syncs_per_op, 1 / base.syncs_per_op, 0);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
