#include "server/state_store.h"

#include <gtest/gtest.h>

#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using namespace std::chrono_literals;  // NOLINT

class StateStoreTest : public ::testing::Test {
 protected:
  asio::io_context io_;
  common::FakeClock clock_;
  StateStore store_{io_.get_executor(), clock_};
};

TEST_F(StateStoreTest, JobVersionsOnlyAdvanceWhenSpecChanges) {
  model::Job job = test::MakeJob("web");
  JobPtr v0 = store_.UpsertJob(job);
  EXPECT_EQ(v0->version, 0u);
  EXPECT_EQ(v0->status, "pending");
  JobPtr again = store_.UpsertJob(job);
  EXPECT_EQ(again->version, 0u);
  EXPECT_EQ(again->job_modify_index, v0->job_modify_index);
  job.task_groups[0].count = 2;
  JobPtr v1 = store_.UpsertJob(job);
  EXPECT_EQ(v1->version, 1u);
  EXPECT_GT(v1->job_modify_index, v0->job_modify_index);
  EXPECT_EQ(v1->create_index, v0->create_index);
  EXPECT_EQ(store_.JobVersions("default", "web").size(), 2u);
  EXPECT_TRUE(store_.DeleteJob("default", "web"));
  EXPECT_EQ(store_.GetJob("default", "web"), nullptr);
  EXPECT_FALSE(store_.DeleteJob("default", "web"));
}

TEST_F(StateStoreTest, JobStatusFollowsAllocsAndEvals) {
  model::Job job = test::MakeJob("web");
  store_.UpsertJob(job);
  model::Evaluation e;
  e.id = "e1";
  e.namespace_ = "default";
  e.job_id = "web";
  e.status = "pending";
  store_.UpsertEvals({e});
  EXPECT_EQ(store_.GetJob("default", "web")->status, "pending");
  model::Allocation a;
  a.id = "a1";
  a.namespace_ = "default";
  a.job_id = "web";
  a.name = "web.web[0]";
  a.task_group = "web";
  a.desired_status = "run";
  a.client_status = "pending";
  store_.UpsertAllocs({a});
  EXPECT_EQ(store_.GetJob("default", "web")->status, "running");
  const uint64_t alloc_modify = store_.GetAlloc("a1")->alloc_modify_index;
  model::AllocClientUpdate u{.id = "a1", .client_status = "complete"};
  EXPECT_TRUE(store_.UpdateAllocsFromClient({u}).empty());
  EXPECT_EQ(store_.GetAlloc("a1")->alloc_modify_index, alloc_modify);
  EXPECT_GT(store_.GetAlloc("a1")->modify_index, alloc_modify);
  e.status = "complete";
  store_.UpsertEvals({e});
  EXPECT_EQ(store_.GetJob("default", "web")->status, "dead");
  auto summary = store_.JobSummary(*store_.GetJob("default", "web"));
  EXPECT_EQ(summary.summary.at("web").complete, 1);
  EXPECT_EQ(store_.UpdateAllocsFromClient({{.id = "nope"}}), std::vector<std::string>{"nope"});
}

TEST_F(StateStoreTest, BlockingQueryWakesOnChangeOrTimesOut) {
  const uint64_t start = store_.TableIndex(Table::kAllocs);
  std::optional<uint64_t> woke;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        std::vector<Table> tables{Table::kAllocs};
        woke = co_await store_.BlockUntil(tables, start, 5min);
      },
      asio::detached);
  io_.poll();
  EXPECT_FALSE(woke);
  store_.UpsertNode(test::MakeNode("n1"));  // other table: keeps waiting
  io_.restart();
  io_.poll();
  EXPECT_FALSE(woke);
  model::Allocation a;
  a.id = "a1";
  store_.UpsertAllocs({a});
  io_.restart();
  io_.poll();
  ASSERT_TRUE(woke);
  EXPECT_GT(*woke, start);

  std::optional<uint64_t> timed_out;
  const uint64_t now_index = store_.TableIndex(Table::kAllocs);
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        std::vector<Table> tables{Table::kAllocs};
        timed_out = co_await store_.BlockUntil(tables, now_index, 10s);
      },
      asio::detached);
  ASSERT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] { return timed_out.has_value(); }));
  EXPECT_EQ(*timed_out, now_index);
}

TEST_F(StateStoreTest, TheChangeFeedTellsEachChangeInOrderAndForgetsTheOldest) {
  const uint64_t first = store_.next_event_seq();
  store_.UpsertJob(test::MakeJob("web"));
  model::Evaluation eval;
  eval.id = "e1";
  eval.namespace_ = "default";
  eval.job_id = "web";
  store_.UpsertEvals({eval});
  EXPECT_TRUE(store_.DeleteJob("default", "web"));
  auto events = store_.EventsFrom(first, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  std::vector<std::string> types;
  uint64_t index = 0;
  for (const model::StateEventPtr& e : *events) {
    types.push_back(e->topic + ":" + e->type);
    EXPECT_GE(e->index, index);
    index = e->index;
  }
  // The job's status refresh after the evaluation is a change too.
  EXPECT_EQ(types.front(), "Job:JobRegistered");
  EXPECT_EQ(types.back(), "Job:JobDeregistered");
  EXPECT_NE(std::find(types.begin(), types.end(), "Evaluation:EvaluationUpdated"), types.end());
  EXPECT_EQ((*events)[1]->filter_keys, (std::vector<std::string>{"web", ""}));
  EXPECT_EQ(store_.EventSeqAtIndex(index), first + events->size() - 1);
  EXPECT_EQ(store_.EventSeqAtIndex(index + 1), store_.next_event_seq());

  // Only the newest max_events() stay: a reader further behind is told so.
  for (size_t i = 0; i < store_.max_events(); ++i)
    store_.UpsertJob(test::MakeJob("j" + std::to_string(i % 50)));
  EXPECT_EQ(store_.EventsFrom(first, 1).status().code(), absl::StatusCode::kOutOfRange);
  const uint64_t oldest = store_.next_event_seq() - store_.max_events();
  EXPECT_EQ(store_.EventsFrom(oldest, 1)->size(), 1u);
  EXPECT_EQ(store_.EventSeqAtIndex(0), oldest);

  // After a reset (an undone write, a replaced state) every reader starts over.
  const uint64_t caught_up = store_.next_event_seq();
  store_.ResetEventFeed();
  EXPECT_EQ(store_.EventsFrom(caught_up, 1).status().code(), absl::StatusCode::kOutOfRange);
  store_.UpsertJob(test::MakeJob("after"));
  EXPECT_EQ(store_.EventsFrom(store_.EventSeqAtIndex(0), 10)->size(), 1u);
}

// server.event_buffer_size: lowering it drops the oldest at once; each event counts.
TEST_F(StateStoreTest, TheEventBufferHoldsAsManyEventsAsConfigured) {
  EXPECT_EQ(store_.max_events(), StateStore::kDefaultMaxEvents);
  for (int i = 0; i < 30; ++i)
    store_.UpsertJob(test::MakeJob("j" + std::to_string(i)));
  const uint64_t next = store_.next_event_seq();
  store_.set_max_events(5);
  EXPECT_EQ(store_.EventsFrom(next - 6, 10).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(store_.EventsFrom(next - 5, 10)->size(), 5u);
  store_.UpsertJob(test::MakeJob("one-more"));
  EXPECT_EQ(store_.EventsFrom(next - 5, 10).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(store_.EventsFrom(next - 4, 10)->size(), 5u);
}

TEST_F(StateStoreTest, PrefixAndNamespaceListing) {
  store_.UpsertJob(test::MakeJob("web"));
  store_.UpsertJob(test::MakeJob("worker"));
  model::Job other = test::MakeJob("web");
  other.namespace_ = "prod";
  store_.UpsertJob(other);
  EXPECT_EQ(store_.ListJobs("default", "w").size(), 2u);
  EXPECT_EQ(store_.ListJobs("default", "wo").size(), 1u);
  EXPECT_EQ(store_.ListJobs("*", "web").size(), 2u);
  EXPECT_EQ(store_.ListJobs("prod", "").size(), 1u);
}

}  // namespace
}  // namespace drover::server

namespace drover::server {
namespace {

TEST_F(StateStoreTest, SchedulerUpsertKeepsClientOwnedFields) {
  model::Allocation a;
  a.id = "a1";
  a.client_status = "pending";
  store_.UpsertAllocs({a});
  model::AllocClientUpdate u{
      .id = "a1", .client_status = "failed", .client_description = "Failed tasks"};
  store_.UpdateAllocsFromClient({u});
  // A plan computed from the older snapshot upserts its copy.
  a.desired_status = "stop";
  store_.UpsertAllocs({a});
  EXPECT_EQ(store_.GetAlloc("a1")->client_status, "failed");
  EXPECT_EQ(store_.GetAlloc("a1")->desired_status, "stop");
}

}  // namespace
}  // namespace drover::server
