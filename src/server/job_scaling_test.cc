// Scaling a group through the API: a new version and a "job-scaling" evaluation,
// Nomad's refusals, events kept per group (the newest 20), policy IDs that stay with
// their group, and events that survive a restart and go with the job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/server.h"
#include "server/server_fixture.h"
#include "server/state_store.h"
#include "server/state_test_util.h"
#include "server/test_fixtures.h"
#include "testing/await.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

class JobScalingTest : public test::ServerFixture {
 protected:
  JobScalingTest() { EXPECT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok()); }
  static model::Job ScalableJob() {
    model::Job job = test::MakeJob("web", 2);
    job.task_groups[0].scaling = model::ScalingPolicy{.min = 1, .max = 4};
    return job;
  }
  absl::StatusOr<EvalResponse> Scale(std::optional<int64_t> count, std::string group = "web",
                                     bool error = false) {
    return testing::Await(io_,
                          server_.ScaleJobDurably(Server::ScaleRequest{.ns = "default",
                                                                       .job_id = "web",
                                                                       .group = std::move(group),
                                                                       .count = count,
                                                                       .message = "by test",
                                                                       .error = error}));
  }
};

TEST_F(JobScalingTest, ACountMakesAVersionAndAScalingEvaluationAndIsRecorded) {
  ASSERT_TRUE(server_.RegisterJob(ScalableJob()).ok());
  const std::string policy = server_.state().GetJob("default", "web")->task_groups[0].scaling->id;
  EXPECT_FALSE(policy.empty());
  auto resp = Scale(3);
  ASSERT_TRUE(resp.ok()) << resp.status();
  JobPtr job = server_.state().GetJob("default", "web");
  EXPECT_EQ(job->version, 1u);
  EXPECT_EQ(job->task_groups[0].count, 3);
  EXPECT_EQ(job->task_groups[0].scaling->id, policy);  // the same policy
  EXPECT_EQ(server_.state().GetEval(resp->eval_id)->triggered_by, "job-scaling");
  auto events = server_.state().ScalingEvents("default", "web");
  ASSERT_NE(events, nullptr);
  ASSERT_EQ(events->events.at("web").size(), 1u);
  const model::ScalingEvent& e = events->events.at("web")[0];
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.previous_count, 2);
  EXPECT_EQ(e.message, "by test");
  EXPECT_EQ(e.eval_id, resp->eval_id);

  // An error report: an event, no version, no evaluation.
  auto report = Scale(std::nullopt, "web", /*error=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->eval_id.empty());
  EXPECT_EQ(server_.state().GetJob("default", "web")->version, 1u);
  EXPECT_EQ(server_.state().ScalingEvents("default", "web")->events.at("web").size(), 2u);
}

TEST_F(JobScalingTest, RefusalsChangeNothing) {
  auto registered = server_.RegisterJob(ScalableJob());
  ASSERT_TRUE(registered.ok());
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return server_.state().GetEval(registered->eval_id)->status != "pending"; }));
  const uint64_t index = server_.state().LatestIndex();
  EXPECT_EQ(Scale(5).status().message(),
            "group count was greater than scaling policy maximum: 5 > 4");
  EXPECT_EQ(Scale(0).status().message(), "group count was less than scaling policy minimum: 0 < 1");
  EXPECT_EQ(Scale(-1).status().message(), "scaling action count can't be negative");
  EXPECT_EQ(Scale(2, "web", true).status().message(),
            "scaling action should not contain count if error is true");
  EXPECT_EQ(Scale(2, "db").status().message(),
            "task group \"db\" specified for scaling does not exist in job");
  EXPECT_TRUE(absl::IsInvalidArgument(Scale(5).status()));
  auto missing =
      testing::Await(io_, server_.ScaleJobDurably(Server::ScaleRequest{
                              .ns = "default", .job_id = "nope", .group = "web", .count = 1}));
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_EQ(server_.state().LatestIndex(), index);
  EXPECT_EQ(server_.state().ScalingEvents("default", "web"), nullptr);
}

TEST_F(JobScalingTest, EachGroupKeepsItsNewestTwentyEventsAndTheyGoWithTheJob) {
  ASSERT_TRUE(server_.RegisterJob(ScalableJob()).ok());
  for (int i = 0; i < 25; ++i)
    ASSERT_TRUE(Scale(1 + i % 4).ok());
  auto events = server_.state().ScalingEvents("default", "web");
  ASSERT_EQ(events->events.at("web").size(), 20u);
  EXPECT_EQ(events->events.at("web")[0].count, 1 + 24 % 4);  // newest first
  ASSERT_TRUE(server_.DeregisterJob("default", "web", /*purge=*/true).ok());
  EXPECT_EQ(server_.state().ScalingEvents("default", "web"), nullptr);
}

TEST(JobScalingPersistTest, EventsSurviveARestartAndTravelInSnapshots) {
  testing::TempDir dir;
  asio::io_context io;
  common::FakeClock clock;
  {
    StateStore s(io.get_executor(), clock);
    auto db = OpenServerStore(dir.path().string());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(s.Attach(std::move(*db)).ok());
    s.UpsertJob(test::MakeJob("web"));
    s.AddScalingEvent("default", "web", "web",
                      model::ScalingEvent{.time = 5,
                                          .count = 3,
                                          .previous_count = 1,
                                          .message = "up",
                                          .meta = {{"k", model::Value("v")}}});
    EXPECT_TRUE(testing::Await(io, s.Flush()).ok());
  }
  StateStore s(io.get_executor(), clock);
  auto db = OpenServerStore(dir.path().string());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(s.Attach(std::move(*db)).ok());
  auto events = s.ScalingEvents("default", "web");
  ASSERT_NE(events, nullptr);
  const model::ScalingEvent& e = events->events.at("web").at(0);
  EXPECT_EQ(e.count, 3);
  EXPECT_EQ(e.message, "up");
  EXPECT_EQ(e.meta.at("k"), model::Value("v"));
  StateStore copy(io.get_executor(), clock);
  ASSERT_TRUE(copy.Restore(s.SnapshotRecords()()).ok());
  ASSERT_NE(copy.ScalingEvents("default", "web"), nullptr);
  EXPECT_EQ(*copy.ScalingEvents("default", "web"), *events);
}

}  // namespace
}  // namespace drover::server
