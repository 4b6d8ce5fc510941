// Client state DB write path: our LMDB store (dedup + group commit) against the same
// store with both turned off (one transaction and one sync per put), in the same run.
// Values are allocation records as the client stores them (about 4 KiB of MessagePack,
// zstd-compressed by state::Encode), keyed like allocations, and every writer waits for
// durability, as a runner persisting its state does.
//
// Writers are coroutines on one io_context awaiting Store::PutAsync: that is how the
// client writes (its runners are coroutines on the control loop). `concurrent_threads`
// runs the same 64 writers as OS threads blocked on a promise each, for comparison; on
// a 2-core machine their wake-ups, not the store, limit how many puts a commit gathers.
//
// Ours and the baseline run alternately, five times each. value and baseline are the
// medians of each; ratio is the median of the five adjacent pairs' ratios (this VM's
// disk latency drifts by several times within minutes, which pairs cancel out).
// One JSON object per line:
//   {"bench":"state_store","workload":..,"metric":"ops_per_s","value":..,"baseline":..,
//    "ratio":..,"target":..}
// plus "syncs_per_op" (lower is better) and, for concurrent ones, "puts_per_sync".
// Workloads (targets from the issue):
//   dup         one writer rewriting one allocation unchanged          ratio >= 100
//   unique      one writer writing new values                          ratio >= 0.9
//   concurrent  64 writers writing new values                          ratio >= 10,
//                                                                      >= 20 puts/sync
//   concurrent_threads  the same with OS threads                       (no target)
// The `idle` workload (1,000 restored allocations, 60 s idle, 0 bytes written) needs a
// real agent: bench/state_idle_bench.cc.
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/asio.h"
#include "common/clock.h"
#include "model/allocation.h"
#include "state/lmdb_backend.h"
#include "state/state_db.h"
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
  bool threads = false;  // OS threads instead of coroutines
};

struct Result {
  double ops_per_s = 0;
  double syncs_per_op = 0;
  double commit_share = 0;  // of the wall time, spent committing
};

// A client's allocation record as the state DB stores it (state::Encode of the API
// JSON), about 4 KiB before compression: a one-task job with its config, env and
// meta, and task state events. `version` changes an index and an event time, as an
// update of the allocation does.
std::string AllocRecord(int writer, int version) {
  auto job = std::make_shared<drover::model::Job>();
  job->id = "web-frontend";
  job->name = job->id;
  job->namespace_ = "default";
  job->type = "service";
  job->datacenters = {"dc1", "dc2"};
  drover::model::TaskGroup g;
  g.name = "frontend";
  g.count = 3;
  drover::model::Task t;
  t.name = "server";
  t.driver = "exec";
  drover::model::Value::Object config;
  config["command"] = "/usr/local/bin/frontend";
  config["args"] = drover::model::Value::Array{
      drover::model::Value("-listen"), drover::model::Value(":8080"),
      drover::model::Value("-log-format"), drover::model::Value("json")};
  t.config = config;
  for (int i = 0; i < 24; ++i)
    t.env["FRONTEND_SETTING_" + std::to_string(i)] = "value-" + std::to_string(i * 7919 % 1000);
  t.resources.cpu = 500;
  t.resources.memory_mb = 256;
  g.tasks.push_back(t);
  job->task_groups.push_back(g);
  for (int i = 0; i < 12; ++i)
    job->meta["team-annotation-" + std::to_string(i)] = "owner" + std::to_string(i);
  drover::model::Allocation a;
  a.id = "5f2c1e7a-0000-4000-8000-" + std::to_string(100000000000 + writer);
  a.eval_id = "9a8b7c6d-1111-4222-8333-444455556666";
  a.node_id = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";
  a.name = "web-frontend.frontend[" + std::to_string(writer) + "]";
  a.namespace_ = "default";
  a.job_id = job->id;
  a.task_group = "frontend";
  a.job = job;
  a.desired_status = "run";
  a.client_status = "running";
  a.modify_index = 1000 + version;
  drover::model::TaskState ts;
  ts.state = "running";
  const int64_t t0 = 1'796'000'000'000'000'000 + int64_t{version} * 1'000'000;
  for (const char* type : {"Received", "Task Setup", "Started"}) {
    drover::model::TaskEvent e(type, drover::common::FromUnixNanos(t0));
    e.display_message = std::string("Task ") + type;
    ts.events.push_back(e);
  }
  a.task_states["server"] = ts;
  return drover::state::Encode("Alloc", drover::codec::ToJson(a));
}

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
    put("allocations/alloc-" + std::to_string(i) + "/alloc", AllocRecord(i, 0));
  // Encoded before the clock starts: this measures the write path, not the encoder.
  std::vector<std::vector<std::string>> values(w.writers);
  for (int i = 0; i < w.writers; ++i) {
    for (int n = 0; n < w.puts_per_writer; ++n)
      values[i].push_back(AllocRecord(i, w.unchanged ? 0 : n + 1));
  }
  const uint64_t txns_before = store.stats().transactions;
  const double commit_before = store.stats().commit_seconds;
  const auto start = std::chrono::steady_clock::now();
  if (w.threads) {
    std::vector<std::thread> writers;
    for (int i = 0; i < w.writers; ++i) {
      writers.emplace_back([&put, &values, i] {
        const std::string key = "allocations/alloc-" + std::to_string(i) + "/alloc";
        for (const std::string& value : values[i])
          put(key, value);
      });
    }
    for (auto& t : writers)
      t.join();
  } else {
    boost::asio::io_context io;
    for (int i = 0; i < w.writers; ++i) {
      auto writer = [](Store& store, const std::vector<std::string>& values,
                       int i) -> boost::asio::awaitable<void> {
        const std::string key = "allocations/alloc-" + std::to_string(i) + "/alloc";
        for (const std::string& value : values) {
          absl::Status s = co_await store.PutAsync(key, value);
          if (!s.ok()) {
            std::fprintf(stderr, "%s\n", s.ToString().c_str());
            std::exit(1);
          }
        }
      };
      boost::asio::co_spawn(io, writer(store, values[i], i), boost::asio::detached);
    }
    io.run();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ops = static_cast<double>(w.writers) * w.puts_per_writer;
  return Result{ops / secs, static_cast<double>(store.stats().transactions - txns_before) / ops,
                (store.stats().commit_seconds - commit_before) / secs};
}

constexpr int kRepeats = 5;

Result Median(std::vector<Result> runs) {
  std::sort(runs.begin(), runs.end(),
            [](const Result& a, const Result& b) { return a.ops_per_s < b.ops_per_s; });
  return runs[runs.size() / 2];
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `ratio`: given, or value / baseline.
void Emit(const std::string& workload, const std::string& metric, double value, double baseline,
          double target, std::optional<double> ratio = std::nullopt) {
  nlohmann::ordered_json j = {{"bench", "state_store"},
                              {"workload", workload},
                              {"metric", metric},
                              {"value", value},
                              {"baseline", baseline}};
  if (ratio)
    j["ratio"] = *ratio;
  else if (baseline > 0)
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
  {
    const std::string record = AllocRecord(0, 1);
    auto plain = drover::state::Decode("Alloc", record);
    const size_t plain_size =
        plain.ok() ? nlohmann::json::to_msgpack(nlohmann::json{{"Alloc", *plain}}).size() : 0;
    nlohmann::ordered_json j = {{"bench", "state_store"},
                                {"metric", "record_bytes"},
                                {"value", record.size()},
                                {"uncompressed", plain_size}};
    std::printf("%s\n", j.dump().c_str());
  }
  const Workload workloads[] = {
      {"dup", 1, 2000, true, 100},
      {"unique", 1, 500, false, 0.9},
      {"concurrent", 64, 100, false, 10},
      {"concurrent_threads", 64, 100, false, 0, true},
  };
  for (const Workload& w : workloads) {
    std::vector<Result> ours_runs;
    std::vector<Result> base_runs;
    std::vector<double> ratios;
    for (int i = 0; i < kRepeats; ++i) {
      ours_runs.push_back(Run(dir / "ours", StoreOptions{}, w));
      base_runs.push_back(Run(dir / "base", StoreOptions{.dedup = false, .batch = false}, w));
      ratios.push_back(ours_runs.back().ops_per_s / base_runs.back().ops_per_s);
    }
    const Result ours = Median(ours_runs);
    const Result base = Median(base_runs);
    Emit(w.name, "ops_per_s", ours.ops_per_s, base.ops_per_s, w.target_ratio, Median(ratios));
    Emit(w.name, "syncs_per_op", ours.syncs_per_op, base.syncs_per_op, 0);
    Emit(w.name, "commit_share", ours.commit_share, base.commit_share, 0);
    if (w.writers > 1 && ours.syncs_per_op > 0)
      Emit(w.name, "puts_per_sync", 1 / ours.syncs_per_op, 1 / base.syncs_per_op, 0);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
