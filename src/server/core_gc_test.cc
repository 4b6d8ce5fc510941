// The servers' garbage collection: what goes and what stays (core_gc.h), and its
// removal from the state, durably.
#include "server/core_gc.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using namespace std::chrono_literals;  // NOLINT
using Ids = std::vector<std::string>;

Ids Sorted(Ids v) {
  std::sort(v.begin(), v.end());
  return v;
}

class CoreGcTest : public ::testing::Test {
 protected:
  void Job(const std::string& id, const std::string& type = "service", bool stop = false) {
    model::Job j = test::MakeJob(id, 1, type);
    j.stop = stop;
    store_.UpsertJob(j);
  }
  void Eval(const std::string& id, const std::string& job, const std::string& status) {
    model::Evaluation e;
    e.id = id;
    e.namespace_ = "default";
    e.job_id = job;
    e.status = status;
    store_.UpsertEvals({e});
  }
  void Alloc(const std::string& id, const std::string& job, const std::string& eval,
             const std::string& client_status, const std::string& desired = "run",
             const std::string& node = "n1") {
    model::Allocation a;
    a.id = id;
    a.namespace_ = "default";
    a.job_id = job;
    a.eval_id = eval;
    a.node_id = node;
    a.name = job + ".web[0]";
    a.task_group = "web";
    a.desired_status = desired;
    a.client_status = "pending";
    store_.UpsertAllocs({a});
    if (client_status != "pending")
      store_.UpdateAllocsFromClient({{.id = id, .client_status = client_status}});
  }
  Garbage Find(const GcThresholds& t = {}) const { return FindGarbage(store_, t, clock_.Now()); }

  asio::io_context io_;
  common::FakeClock clock_;
  StateStore store_{io_.get_executor(), clock_};
};

TEST_F(CoreGcTest, ADeadJobGoesWithItsHistoryOnceOldEnough) {
  Job("done");
  Eval("e1", "done", "complete");
  Alloc("a1", "done", "e1", "complete");
  Job("done");  // a second version: the job is dead once its alloc and eval are done
  EXPECT_EQ(store_.GetJob("default", "done")->status, "dead");
  EXPECT_TRUE(Find().empty());
  clock_.Advance(4h + 1s);
  const Garbage g = Find();
  EXPECT_EQ(g.jobs, (std::vector<std::pair<std::string, std::string>>{{"default", "done"}}));
  EXPECT_EQ(g.evals, Ids{"e1"});
  EXPECT_EQ(g.allocs, Ids{"a1"});
  store_.Remove(g);
  EXPECT_EQ(store_.GetJob("default", "done"), nullptr);
  EXPECT_TRUE(store_.JobVersions("default", "done").empty());
  EXPECT_EQ(store_.GetEval("e1"), nullptr);
  EXPECT_EQ(store_.GetAlloc("a1"), nullptr);
  EXPECT_TRUE(store_.AllocsByJob("default", "done").empty());
  EXPECT_TRUE(store_.AllocsByNode("n1").empty());
  EXPECT_TRUE(store_.EvalsByJob("default", "done").empty());
}

TEST_F(CoreGcTest, ForcedCollectionIgnoresAgeButNotWhatStillRuns) {
  Job("web");
  Eval("e1", "web", "complete");
  Alloc("old", "web", "e1", "complete");
  Eval("e2", "web", "complete");
  Alloc("running", "web", "e2", "running");
  Alloc("stopped", "web", "e2", "complete", "stop");
  Eval("e3", "web", "pending");
  const Garbage g = Find(GcThresholds::Forced());
  EXPECT_TRUE(g.jobs.empty());
  EXPECT_EQ(g.evals, Ids{"e1"});  // e2 made an allocation that still runs; e3 is pending
  EXPECT_EQ(Sorted(g.allocs), (Ids{"old", "stopped"}));
}

TEST_F(CoreGcTest, ALiveBatchJobKeepsItsResults) {
  Job("batch", "batch");
  Eval("e1", "batch", "complete");
  Alloc("a1", "batch", "e1", "complete");
  Eval("e2", "batch", "pending");  // keeps the job from being dead
  EXPECT_TRUE(Find(GcThresholds::Forced()).empty());
  Job("batch", "batch", /*stop=*/true);
  clock_.Advance(2h);
  EXPECT_TRUE(Find().evals.empty()) << "batch evaluations wait batch_eval_gc_threshold";
  clock_.Advance(24h);
  EXPECT_EQ(Find().evals, Ids{"e1"});
  EXPECT_EQ(Find().allocs, Ids{"a1"});
}

TEST_F(CoreGcTest, AFailedAllocationStaysUntilReplaced) {
  Job("web");
  Eval("e1", "web", "complete");
  Alloc("failed", "web", "e1", "failed");
  Alloc("other", "web", "e1", "running");
  EXPECT_TRUE(Find(GcThresholds::Forced()).allocs.empty());
  model::Allocation replaced = *store_.GetAlloc("failed");
  replaced.next_allocation = "other";
  store_.UpsertAllocs({replaced});
  EXPECT_EQ(Find(GcThresholds::Forced()).allocs, Ids{"failed"});
}

TEST_F(CoreGcTest, APurgedJobLeavesItsEvaluationsAndAllocationsToTheCollection) {
  Job("gone");
  Eval("e1", "gone", "complete");
  Alloc("a1", "gone", "e1", "complete");
  Alloc("a2", "gone", "e-unknown", "complete");  // its evaluation is gone already
  ASSERT_TRUE(store_.DeleteJob("default", "gone"));
  clock_.Advance(1h);
  const Garbage g = Find();
  EXPECT_EQ(g.evals, Ids{"e1"});
  EXPECT_EQ(Sorted(g.allocs), (Ids{"a1", "a2"}));
}

TEST_F(CoreGcTest, ADownNodeGoesOnceNothingRunsOnIt) {
  model::Node down = test::MakeNode("n1");
  down.status = model::kNodeStatusDown;
  down.status_updated_at = common::ToUnixNanos(clock_.Now()) / 1'000'000'000;
  store_.UpsertNode(down);
  model::Node ready = test::MakeNode("n2");
  ready.status = model::kNodeStatusReady;
  store_.UpsertNode(ready);
  Job("web");
  Eval("e1", "web", "pending");
  Alloc("a1", "web", "e1", "running", "run", "n1");
  clock_.Advance(25h);
  EXPECT_TRUE(Find().nodes.empty());
  store_.UpdateAllocsFromClient({{.id = "a1", .client_status = "lost"}});
  EXPECT_EQ(Find().nodes, Ids{"n1"});
  // A stopped allocation the down node never reported on goes too.
  Alloc("a2", "web", "e1", "pending", "stop", "n1");
  EXPECT_EQ(Find(GcThresholds::Forced()).allocs, (Ids{"a1", "a2"}));
}

TEST_F(CoreGcTest, RemovalWakesTheNodeAndBumpsEachTable) {
  Job("web");
  Eval("e1", "web", "complete");
  Alloc("a1", "web", "e1", "complete");
  const uint64_t before = store_.NodeAllocsIndex("n1");
  const uint64_t allocs_index = store_.TableIndex(Table::kAllocs);
  store_.Remove(Find(GcThresholds::Forced()));
  EXPECT_GT(store_.NodeAllocsIndex("n1"), before);
  EXPECT_GT(store_.TableIndex(Table::kAllocs), allocs_index);
  EXPECT_EQ(store_.LatestIndex(), store_.TableIndex(Table::kAllocs));
  // Removing what is gone already changes nothing.
  const uint64_t latest = store_.LatestIndex();
  store_.Remove({.allocs = {"a1"}, .evals = {"e1"}, .jobs = {}, .nodes = {"none"}});
  EXPECT_EQ(store_.LatestIndex(), latest);
}

TEST(CoreGcPersistTest, WhatWentStaysGoneAfterARestart) {
  testing::TempDir dir;
  asio::io_context io;
  common::FakeClock clock;
  const auto open = [&] {
    auto s = std::make_unique<StateStore>(io.get_executor(), clock);
    auto db = OpenServerStore(dir.path().string());
    EXPECT_TRUE(db.ok()) << db.status();
    EXPECT_TRUE(s->Attach(std::move(*db)).ok());
    return s;
  };
  {
    auto s = open();
    s->UpsertJob(test::MakeJob("web"));
    model::Evaluation e;
    e.id = "e1";
    e.namespace_ = "default";
    e.job_id = "web";
    e.status = "complete";
    s->UpsertEvals({e});
    ASSERT_TRUE(s->DeleteJob("default", "web"));
    const Garbage g = FindGarbage(*s, GcThresholds::Forced(), clock.Now());
    ASSERT_EQ(g.evals, Ids{"e1"});
    s->Remove(g);
    std::optional<absl::Status> flushed;
    asio::co_spawn(
        io,
        [](StateStore& st, std::optional<absl::Status>& out) -> asio::awaitable<void> {
          out = co_await st.Flush();
        }(*s, flushed),
        asio::detached);
    ASSERT_TRUE(testing::RunUntil(io, [&] { return flushed.has_value(); }));
    ASSERT_TRUE(flushed->ok()) << *flushed;
  }
  auto reopened = open();
  EXPECT_EQ(reopened->GetEval("e1"), nullptr);
  EXPECT_TRUE(reopened->ListEvals("*", "").empty());
}

}  // namespace
}  // namespace drover::server
