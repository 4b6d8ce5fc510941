// Client state DB write path: our LMDB store (dedup + group commit) against the same
// store with both turned off (one transaction and one sync per put), in the same run.
// Values are 4 KiB, keyed like allocations. One JSON object per line:
//   {"bench":"state_store","workload":..,"metric":"ops_per_s","value":..,"baseline":..,
//    "ratio":..}  and  "metric":"syncs_per_op" (lower is better).
// Workloads:
//   concurrent_updates: 8 writers each rewriting their allocation with a new value;
//   unchanged_rewrites: the same writers writing back what is already stored (what a
//     periodic snapshot of idle allocations does).
#include <stdlib.h>

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

constexpr int kWriters = 8;
constexpr int kPutsPerWriter = 200;

struct Result {
  double ops_per_s = 0;
  double syncs_per_op = 0;
};

// Each writer puts and waits for durability, as a runner persisting its state does.
Result Run(const fs::path& dir, StoreOptions options, bool unchanged) {
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
  for (int w = 0; w < kWriters; ++w)
    put("allocations/alloc-" + std::to_string(w) + "/alloc", std::string(4096, 'a'));
  const uint64_t txns_before = store.stats().transactions;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&put, w, unchanged] {
      const std::string key = "allocations/alloc-" + std::to_string(w) + "/alloc";
      for (int i = 0; i < kPutsPerWriter; ++i) {
        std::string value(4096, 'a');
        if (!unchanged)
          value.replace(0, 16, std::to_string(i) + "-" + std::to_string(w));
        put(key, value);
      }
    });
  }
  for (auto& t : writers)
    t.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ops = kWriters * kPutsPerWriter;
  return Result{ops / secs, static_cast<double>(store.stats().transactions - txns_before) / ops};
}

void Emit(const std::string& workload, const std::string& metric, double value, double baseline) {
  nlohmann::ordered_json j = {
      {"bench", "state_store"}, {"workload", workload},
      {"metric", metric},       {"value", value},
      {"baseline", baseline},   {"ratio", baseline > 0 ? value / baseline : 0.0}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/drover-statebench-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  for (const bool unchanged : {false, true}) {
    const std::string workload = unchanged ? "unchanged_rewrites" : "concurrent_updates";
    const Result ours = Run(dir / "ours", StoreOptions{}, unchanged);
    const Result base = Run(dir / "base", StoreOptions{.dedup = false, .batch = false}, unchanged);
    Emit(workload, "ops_per_s", ours.ops_per_s, base.ops_per_s);
    Emit(workload, "syncs_per_op", ours.syncs_per_op, base.syncs_per_op);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
