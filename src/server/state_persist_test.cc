// The server's state survives a restart: every table, every job version and the
// indexes come back from the state DB; a damaged record stops the load; failed writes
// are reported by Flush; pending evaluations are processed after a restart.
#include <atomic>
#include <future>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "server/server.h"
#include "server/state_store.h"
#include "server/state_test_util.h"
#include "server/test_fixtures.h"
#include "state/state_db.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

absl::Status RunFlush(asio::io_context& io, StateStore& s) {
  std::optional<absl::Status> result;
  asio::co_spawn(
      io,
      [](StateStore& st, std::optional<absl::Status>& out) -> asio::awaitable<void> {
        out = co_await st.Flush();
      }(s, result),
      asio::detached);
  EXPECT_TRUE(testing::RunUntil(io, [&] { return result.has_value(); }));
  return result.value_or(absl::DeadlineExceededError("flush did not finish"));
}

class StatePersistTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> Open() {
    auto s = std::make_unique<StateStore>(io_.get_executor(), clock_);
    auto db = OpenServerStore(dir_.path().string());
    EXPECT_TRUE(db.ok()) << db.status();
    if (db.ok()) {
      absl::Status attached = s->Attach(std::move(*db));
      EXPECT_TRUE(attached.ok()) << attached;
    }
    return s;
  }

  testing::TempDir dir_;
  asio::io_context io_;
  common::FakeClock clock_;
};

TEST_F(StatePersistTest, EveryTableAndIndexComesBack) {
  codec::Json before;
  {
    auto s = Open();
    s->UpsertNode(test::MakeNode("n1"));
    model::Job job = test::MakeJob("web");
    s->UpsertJob(job);
    job.task_groups[0].count = 3;
    s->UpsertJob(job);  // version 1
    s->UpsertJob(test::MakeJob("gone"));
    EXPECT_TRUE(s->DeleteJob("default", "gone"));
    model::Job other = test::MakeJob("web");
    other.namespace_ = "prod";
    s->UpsertJob(other);
    model::Evaluation e;
    e.id = "e1";
    e.namespace_ = "default";
    e.job_id = "web";
    e.status = model::kEvalComplete;
    s->UpsertEvals({e});
    model::Allocation a;
    a.id = "a1";
    a.namespace_ = "default";
    a.job_id = "web";
    a.node_id = "n1";
    a.task_group = "web";
    a.desired_status = "run";
    a.client_status = "pending";
    a.job = std::make_shared<const model::Job>(*s->GetJob("default", "web"));
    s->UpsertAllocs({a});
    model::TaskState ts;
    ts.state = "running";
    s->UpdateAllocsFromClient(
        {{.id = "a1", .task_states = {{"server", ts}}, .client_status = "running"}});
    ASSERT_TRUE(RunFlush(io_, *s).ok());
    before = test::Snapshot(*s);
    EXPECT_EQ(s->GetJob("default", "web")->status, "running");
  }
  auto reopened = Open();
  EXPECT_EQ(test::Snapshot(*reopened), before);
  EXPECT_EQ(reopened->JobVersions("default", "web").size(), 2u);
  EXPECT_EQ(reopened->GetJob("default", "web")->version, 1u);
  EXPECT_EQ(reopened->GetJob("default", "gone"), nullptr);
  // Indexes continue from where they were, never reused.
  const uint64_t index = reopened->LatestIndex();
  reopened->UpsertNode(test::MakeNode("n2"));
  EXPECT_EQ(reopened->LatestIndex(), index + 1);
}

// operator snapshot save/restore: what one store holds, another takes whole.
TEST_F(StatePersistTest, ASnapshotRestoresEveryRecordIntoAnotherStore) {
  StateStore source(io_.get_executor(), clock_);
  source.UpsertNode(test::MakeNode("n1"));
  model::Job job = test::MakeJob("web");
  source.UpsertJob(job);
  job.task_groups[0].count = 2;
  source.UpsertJob(job);
  model::Evaluation e;
  e.id = "e1";
  e.namespace_ = "default";
  e.job_id = "web";
  e.status = model::kEvalPending;
  source.UpsertEvals({e});
  const std::vector<model::StateRecord> records = source.SnapshotRecords()();

  // The target had its own state: replaced, on disk too.
  {
    auto target = Open();
    target->UpsertJob(test::MakeJob("old"));
    target->UpsertNode(test::MakeNode("n9"));
    for (int i = 0; i < 20; ++i)
      target->UpsertNode(test::MakeNode("n9"));  // indexes above the snapshot's
    const uint64_t before = target->LatestIndex();
    ASSERT_TRUE(target->Restore(records).ok());
    EXPECT_GT(target->LatestIndex(), before);
    ASSERT_TRUE(RunFlush(io_, *target).ok());
    EXPECT_EQ(target->GetJob("default", "old"), nullptr);
    EXPECT_EQ(target->GetNode("n9"), nullptr);
    EXPECT_EQ(target->JobVersions("default", "web").size(), 2u);
    EXPECT_EQ(target->GetNode("n1")->secret_id, "secret-n1");  // kept: the node is known
    codec::Json restored = test::Snapshot(*target);
    codec::Json original = test::Snapshot(source);
    for (codec::Json* j : {&restored, &original}) {
      j->erase("index");
      j->erase("tables");
    }
    EXPECT_EQ(restored, original);
  }
  auto reopened = Open();
  EXPECT_EQ(reopened->JobVersions("default", "web").size(), 2u);
  EXPECT_EQ(reopened->GetJob("default", "old"), nullptr);
  EXPECT_EQ(reopened->GetEval("e1")->status, model::kEvalPending);

  // A record that does not decode: refused, naming it, and nothing changes.
  std::vector<model::StateRecord> bad = records;
  bad.push_back({"allocs/broken", "not a record"});
  absl::Status refused = reopened->Restore(bad);
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_NE(refused.message().find("allocs/broken"), std::string::npos) << refused;
  EXPECT_NE(reopened->GetJob("default", "web"), nullptr);
}

TEST_F(StatePersistTest, ADamagedRecordFailsTheLoadNamingIt) {
  {
    auto s = Open();
    s->UpsertNode(test::MakeNode("n1"));
    ASSERT_TRUE(RunFlush(io_, *s).ok());
  }
  {
    auto db = OpenServerStore(dir_.path().string());
    ASSERT_TRUE(db.ok());
    std::promise<absl::Status> done;
    (*db)->Put("nodes/n1", "not msgpack", [&done](absl::Status st) { done.set_value(st); });
    ASSERT_TRUE(done.get_future().get().ok());
  }
  StateStore s(io_.get_executor(), clock_);
  auto db = OpenServerStore(dir_.path().string());
  ASSERT_TRUE(db.ok());
  absl::Status attached = s.Attach(std::move(*db));
  EXPECT_TRUE(absl::IsDataLoss(attached)) << attached;
  EXPECT_NE(attached.message().find("'nodes/n1'"), std::string::npos) << attached;
  EXPECT_FALSE(s.durable());
}

// Memory backed; commits fail while `failing` is set.
class FlakyBackend : public state::KvBackend {
 public:
  explicit FlakyBackend(std::shared_ptr<std::atomic<bool>> failing)
      : mem_(state::NewMemoryBackend()), failing_(std::move(failing)) {}
  std::string Name() const override { return "flaky"; }
  absl::Status Commit(const std::vector<state::KvOp>& ops) override {
    if (*failing_)
      return absl::ResourceExhaustedError("disk full");
    return mem_->Commit(ops);
  }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    return mem_->Get(key);
  }
  absl::StatusOr<state::KvPairs> Scan(std::string_view prefix) override {
    return mem_->Scan(prefix);
  }

 private:
  std::unique_ptr<state::KvBackend> mem_;
  std::shared_ptr<std::atomic<bool>> failing_;
};

TEST_F(StatePersistTest, AFailedWriteFailsEveryFlushUntilTheStateIsWrittenAgain) {
  auto failing = std::make_shared<std::atomic<bool>>(false);
  auto backend = std::make_unique<FlakyBackend>(failing);
  FlakyBackend* raw = backend.get();
  StateStore s(io_.get_executor(), clock_);
  ASSERT_TRUE(s.Attach(std::make_unique<state::Store>(std::move(backend))).ok());
  s.UpsertJob(test::MakeJob("gone"));
  ASSERT_TRUE(RunFlush(io_, s).ok());

  *failing = true;
  s.UpsertNode(test::MakeNode("n1"));
  EXPECT_TRUE(s.DeleteJob("default", "gone"));
  absl::Status first = RunFlush(io_, s);
  EXPECT_TRUE(absl::IsUnavailable(first)) << first;
  EXPECT_NE(first.message().find("failed to persist"), std::string::npos) << first;
  EXPECT_EQ(s.GetNode("n1")->id, "n1");  // the in-memory state goes on
  // A later request is not told "durable" while the disk lags behind.
  s.UpsertNode(test::MakeNode("n2"));
  EXPECT_FALSE(RunFlush(io_, s).ok());

  // Once writes work again, the next flush writes what was lost (and the purge).
  *failing = false;
  ASSERT_TRUE(RunFlush(io_, s).ok());
  EXPECT_TRUE(RunFlush(io_, s).ok());
  auto nodes = raw->Scan("nodes/");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 2u);
  auto jobs = raw->Scan("jobs/");
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

// Defect 19 of issue 16: a registration the disk refused answered 500, yet the job was
// live and scheduled. Now it is undone: the job as it was, no evaluation, nothing queued.
TEST_F(StatePersistTest, AWriteThatCannotBeMadeDurableIsUndone) {
  asio::thread_pool pool(1);
  auto failing = std::make_shared<std::atomic<bool>>(false);
  Server server(io_.get_executor(), pool, clock_, ServerConfig{});
  ASSERT_TRUE(server.state()
                  .Attach(std::make_unique<state::Store>(std::make_unique<FlakyBackend>(failing)))
                  .ok());
  auto run = [&](auto awaitable) {
    std::optional<absl::StatusOr<EvalResponse>> out;
    asio::co_spawn(
        io_,
        [&out, a = std::move(awaitable)]() mutable -> asio::awaitable<void> {
          out = co_await std::move(a);
        },
        asio::detached);
    EXPECT_TRUE(testing::RunUntil(io_, [&] { return out.has_value(); }));
    return out.value_or(absl::DeadlineExceededError("did not finish"));
  };
  auto v1 = codec::PrepareJob(test::MakeJob("web", 1), "global");
  ASSERT_TRUE(v1.ok());
  ASSERT_TRUE(run(server.RegisterJobDurably(*std::move(v1))).ok());
  const uint64_t evals = server.state().ListEvals("*", "").size();
  const size_t queued = server.pending_evals();

  *failing = true;
  auto v2 = codec::PrepareJob(test::MakeJob("web", 3), "global");
  ASSERT_TRUE(v2.ok());
  auto failed = run(server.RegisterJobDurably(*std::move(v2)));
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_EQ(server.state().GetJob("default", "web")->task_groups[0].count, 1);
  EXPECT_EQ(server.state().JobVersions("default", "web").size(), 1u);
  EXPECT_EQ(server.state().ListEvals("*", "").size(), evals);
  EXPECT_EQ(server.pending_evals(), queued);
  auto fresh = codec::PrepareJob(test::MakeJob("new", 1), "global");
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(run(server.RegisterJobDurably(*std::move(fresh))).ok());
  EXPECT_EQ(server.state().GetJob("default", "new"), nullptr);
  EXPECT_FALSE(run(server.DeregisterJobDurably("default", "web", true, false)).ok());
  EXPECT_NE(server.state().GetJob("default", "web"), nullptr);

  // With the disk back, the same writes go through.
  *failing = false;
  auto again = codec::PrepareJob(test::MakeJob("web", 3), "global");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(run(server.RegisterJobDurably(*std::move(again))).ok());
  EXPECT_EQ(server.state().GetJob("default", "web")->task_groups[0].count, 3);
  // EnforceIndex is checked with the write: a stale index is refused.
  auto stale = codec::PrepareJob(test::MakeJob("web", 4), "global");
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(
      run(server.RegisterJobDurably(*std::move(stale), uint64_t{1})).status()));
  io_.restart();
  io_.poll();
  pool.join();
}

TEST_F(StatePersistTest, IndexesNeverGoBackEvenWithoutTheIndexRecord) {
  uint64_t latest = 0;
  {
    auto s = Open();
    s->UpsertNode(test::MakeNode("n1"));
    s->UpsertNode(test::MakeNode("n1"));
    latest = s->LatestIndex();
    ASSERT_TRUE(RunFlush(io_, *s).ok());
  }
  {
    auto db = OpenServerStore(dir_.path().string());
    ASSERT_TRUE(db.ok());
    std::promise<absl::Status> done;
    (*db)->Delete("meta/index", [&done](absl::Status st) { done.set_value(st); });
    ASSERT_TRUE(done.get_future().get().ok());
  }
  auto s = Open();
  EXPECT_EQ(s->GetNode("n1")->id, "n1");
  EXPECT_GE(s->LatestIndex(), latest);
  EXPECT_GE(s->TableIndex(Table::kNodes), s->GetNode("n1")->modify_index);
}

TEST_F(StatePersistTest, ANewerSchemaIsRefused) {
  {
    auto db = OpenServerStore(dir_.path().string());
    ASSERT_TRUE(db.ok());
    std::promise<absl::Status> done;
    (*db)->Put("meta/version", "99", [&done](absl::Status st) { done.set_value(st); });
    ASSERT_TRUE(done.get_future().get().ok());
  }
  auto db = OpenServerStore(dir_.path().string());
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("server/state.db"), std::string::npos) << db.status();
  EXPECT_NE(db.status().message().find("\"99\""), std::string::npos) << db.status();
}

TEST_F(StatePersistTest, ARestartedServerProcessesPendingEvaluations) {
  asio::thread_pool pool(1);
  std::string eval_id;
  {
    Server server(io_.get_executor(), pool, clock_, ServerConfig{});
    auto db = OpenServerStore(dir_.path().string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(server.state().Attach(std::move(*db)).ok());
    ASSERT_TRUE(server.RegisterNode(test::MakeNode("n1")).ok());
    // Never started: the evaluation is still pending when the "agent" goes away.
    auto resp = server.RegisterJob(test::MakeJob("web", 2));
    ASSERT_TRUE(resp.ok()) << resp.status();
    eval_id = resp->eval_id;
    ASSERT_TRUE(RunFlush(io_, server.state()).ok());
  }
  Server server(io_.get_executor(), pool, clock_, ServerConfig{});
  auto db = OpenServerStore(dir_.path().string());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(server.state().Attach(std::move(*db)).ok());
  ASSERT_EQ(server.state().GetEval(eval_id)->status, model::kEvalPending);
  const common::Time started = clock_.Now();
  server.Start();
  EXPECT_TRUE(testing::RunUntil(
      io_, [&] { return server.state().GetEval(eval_id)->status == model::kEvalComplete; }));
  EXPECT_EQ(server.state().AllocsByJob("default", "web").size(), 2u);
  // The node gets a fresh heartbeat TTL (staggered up to twice the minimum) and the
  // grace from the restart: still ready before the shortest such deadline, down once
  // the longest has passed without a heartbeat.
  const ServerConfig& c = server.config();
  const common::Time earliest = started + c.min_heartbeat_ttl + c.heartbeat_grace;
  const common::Time latest = started + 2 * c.min_heartbeat_ttl + c.heartbeat_grace;
  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return clock_.Now() >= earliest - std::chrono::seconds(1); }));
  EXPECT_EQ(server.state().GetNode("n1")->status, model::kNodeStatusReady);
  EXPECT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return server.state().GetNode("n1")->status == model::kNodeStatusDown; }));
  EXPECT_LE(clock_.Now(), latest + std::chrono::seconds(1));
  server.Stop();
  io_.restart();
  io_.poll();
  pool.join();
}

}  // namespace
}  // namespace drover::server
