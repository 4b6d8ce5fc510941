// The server state's writes through etcd (docs/ha.md) against the embedded LMDB store,
// in the same run: the same StateStore writes, made durable the same way, with the
// etcd-backed writer a leader uses (fenced transactions, group commit) or the local DB.
// etcd is a real one (Debian's etcd-server) on loopback with its data on this disk.
//
// One JSON object per line:
//   {"bench":"etcd_backend","workload":..,"metric":..,"value":<etcd>,"baseline":<lmdb>,
//    "ratio":<etcd/lmdb>,...}
// Workloads:
//   registrations   a job version and its evaluation, made durable before the next (as
//                   the server's durable writes go: one at a time)       registrations/s
//   alloc_updates   2,000 allocations on 100 nodes; every node reports its 20 at once
//                   (UpdateAllocsDurably), 10 rounds; group commit gathers the
//                   concurrent reports into transactions   updates/s (target >= 5,000
//                   through etcd) and updates per etcd transaction
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/asio.h"
#include "common/clock.h"
#include "etcd/election.h"
#include "etcd/state_backend.h"
#include "server/state_store.h"
#include "server/test_fixtures.h"
#include "state/store.h"
#include "testing/await.h"
#include "testing/etcd_process.h"
#include "testing/test_util.h"

namespace {

using namespace drover;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::steady_clock;

constexpr int kRegistrations = 300;
constexpr int kNodes = 100;
constexpr int kAllocsPerNode = 20;
constexpr int kRounds = 10;

struct Result {
  double per_second = 0;
  uint64_t updates = 0;
  uint64_t transactions = 0;  // etcd transactions (or LMDB commits)
};

// The writer under test: the embedded DB, or etcd under a fresh term.
struct Writer {
  std::shared_ptr<state::Store> store;
  const etcd::StateBackend* etcd = nullptr;
  uint64_t Transactions() const {
    return etcd != nullptr ? etcd->transactions() : store->stats().transactions;
  }
};

model::Evaluation EvalFor(const model::Job& job, int i) {
  model::Evaluation e;
  e.id = "eval-" + std::to_string(i);
  e.namespace_ = job.namespace_;
  e.job_id = job.id;
  e.type = job.type;
  e.priority = job.priority;
  e.triggered_by = "job-register";
  e.status = model::kEvalPending;
  return e;
}

// Writes through the etcd writer `w` (w.store set) or the LMDB store `lmdb`.
void UseWriter(server::StateStore& s, const Writer& w, std::unique_ptr<state::Store> lmdb) {
  if (w.store) {
    s.SetWriter(w.store);
  } else if (absl::Status attached = s.Attach(std::move(lmdb)); !attached.ok()) {
    std::fprintf(stderr, "%s\n", attached.ToString().c_str());
    std::exit(1);
  }
}

Result Registrations(asio::io_context& io, common::Clock& clock, Writer w,
                     std::unique_ptr<state::Store> lmdb) {
  server::StateStore s(io.get_executor(), clock);
  UseWriter(s, w, std::move(lmdb));
  const auto start = Clock::now();
  auto work = [&]() -> asio::awaitable<int> {
    for (int i = 0; i < kRegistrations; ++i) {
      model::Job job = server::test::MakeJob("job-" + std::to_string(i), 3);
      s.UpsertJob(job);
      s.UpsertEvals({EvalFor(job, i)});
      absl::Status durable = co_await s.Flush();
      if (!durable.ok()) {
        std::fprintf(stderr, "registration failed: %s\n", durable.ToString().c_str());
        co_return i;
      }
    }
    co_return kRegistrations;
  };
  const int done = drover::testing::Await(io, work(), std::chrono::minutes(5));
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return Result{.per_second = done / secs};
}

Result AllocUpdates(asio::io_context& io, common::Clock& clock, Writer w,
                    std::unique_ptr<state::Store> lmdb) {
  const bool etcd_writer = w.store != nullptr;
  server::StateStore s(io.get_executor(), clock);
  UseWriter(s, w, std::move(lmdb));
  model::Job job = server::test::MakeJob("web", kNodes * kAllocsPerNode);
  auto stored = s.UpsertJob(job);
  std::vector<model::Allocation> allocs;
  for (int n = 0; n < kNodes; ++n) {
    s.UpsertNode(server::test::MakeNode("node-" + std::to_string(n)));
    for (int a = 0; a < kAllocsPerNode; ++a) {
      model::Allocation alloc;
      alloc.id = "alloc-" + std::to_string(n) + "-" + std::to_string(a);
      alloc.namespace_ = "default";
      alloc.job_id = "web";
      alloc.job = stored;
      alloc.node_id = "node-" + std::to_string(n);
      alloc.task_group = "web";
      alloc.desired_status = "run";
      alloc.client_status = "pending";
      allocs.push_back(std::move(alloc));
    }
  }
  s.UpsertAllocs(std::move(allocs));
  (void)drover::testing::Await(io, s.Flush(), std::chrono::minutes(2));
  const uint64_t txns_before = etcd_writer ? w.Transactions() : 0;

  const auto start = Clock::now();
  uint64_t updates = 0;
  for (int round = 0; round < kRounds; ++round) {
    int pending = kNodes;
    for (int n = 0; n < kNodes; ++n) {
      auto report = [&s, &pending, &updates, n, round]() -> asio::awaitable<void> {
        std::vector<model::AllocClientUpdate> batch;
        for (int a = 0; a < kAllocsPerNode; ++a) {
          batch.push_back({.id = "alloc-" + std::to_string(n) + "-" + std::to_string(a),
                           .client_status = round % 2 == 0 ? "running" : "pending",
                           .client_description = "round " + std::to_string(round)});
        }
        s.UpdateAllocsFromClient(batch);
        absl::Status durable = co_await s.Flush();
        if (durable.ok())
          updates += batch.size();
        --pending;
      };
      asio::co_spawn(io, report(), asio::detached);
    }
    drover::testing::RunUntil(
        io, [&] { return pending == 0; }, std::chrono::minutes(5));
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  Result r{.per_second = updates / secs, .updates = updates};
  if (etcd_writer)
    r.transactions = w.Transactions() - txns_before;
  return r;
}

}  // namespace

int main() {
  drover::testing::EtcdProcess etcd;
  if (!etcd.ok()) {
    std::fprintf(stderr, "etcd did not start:\n%s\n", etcd.Log().c_str());
    return 1;
  }
  asio::io_context io;
  common::RealClock clock;
  etcd::Client client({etcd.endpoint()});
  etcd::Election election(client, clock, "/bench/leader", "bench", 30);
  auto term = drover::testing::Await(io, election.Campaign());
  if (!term.ok()) {
    std::fprintf(stderr, "election failed: %s\n", term.status().ToString().c_str());
    return 1;
  }
  int n = 0;
  const auto etcd_writer = [&]() {
    auto backend = std::make_unique<etcd::StateBackend>(
        etcd::StateBackendOptions{.endpoints = {etcd.endpoint()},
                                  .prefix = "/bench" + std::to_string(n++),
                                  .leader_key = "/bench/leader",
                                  .term = *term});
    Writer w;
    w.etcd = backend.get();
    w.store = std::make_shared<state::Store>(std::move(backend));
    return w;
  };
  drover::testing::TempDir dir;
  const auto lmdb = [&]() {
    auto db = server::OpenServerStore((dir.path() / std::to_string(n++)).string());
    if (!db.ok()) {
      std::fprintf(stderr, "%s\n", db.status().ToString().c_str());
      std::exit(1);
    }
    return *std::move(db);
  };

  const Result reg_etcd = Registrations(io, clock, etcd_writer(), nullptr);
  const Result reg_lmdb = Registrations(io, clock, Writer{}, lmdb());
  std::printf("%s\n", nlohmann::json{{"bench", "etcd_backend"},
                                     {"workload", "registrations"},
                                     {"metric", "registrations_per_s"},
                                     {"value", reg_etcd.per_second},
                                     {"baseline", reg_lmdb.per_second},
                                     {"ratio", reg_etcd.per_second / reg_lmdb.per_second}}
                          .dump()
                          .c_str());
  const Result up_etcd = AllocUpdates(io, clock, etcd_writer(), nullptr);
  const Result up_lmdb = AllocUpdates(io, clock, Writer{}, lmdb());
  std::printf("%s\n",
              nlohmann::json{{"bench", "etcd_backend"},
                             {"workload", "alloc_updates"},
                             {"metric", "updates_per_s"},
                             {"value", up_etcd.per_second},
                             {"baseline", up_lmdb.per_second},
                             {"ratio", up_etcd.per_second / up_lmdb.per_second},
                             {"target", 5000},
                             {"updates_per_txn",
                              up_etcd.transactions == 0
                                  ? 0.0
                                  : static_cast<double>(up_etcd.updates) / up_etcd.transactions},
                             {"met", up_etcd.per_second >= 5000}}
                  .dump()
                  .c_str());
  return 0;
}
