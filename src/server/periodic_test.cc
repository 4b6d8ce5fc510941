// Periodic and parameterized jobs on a server with a fake clock: launches on the cron's
// times, prohibit_overlap, forced launches, one launch for those missed while no leader
// ran, launch records that survive a restart, and dispatches with Nomad's refusals.
#include "server/periodic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/server.h"
#include "server/server_fixture.h"
#include "server/state_store.h"
#include "server/test_fixtures.h"
#include "testing/await.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

int64_t UnixSeconds(common::Time t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

model::Job PeriodicJob(const std::string& cron, bool prohibit_overlap = false) {
  model::Job job = test::MakeJob("report", 1, model::kJobTypeBatch);
  job.periodic = model::PeriodicConfig{.spec = cron, .prohibit_overlap = prohibit_overlap};
  return job;
}

model::Job ParameterizedJob(std::string payload, std::vector<std::string> required,
                            std::vector<std::string> optional = {}) {
  model::Job job = test::MakeJob("render", 1, model::kJobTypeBatch);
  job.meta = {{"owner", "ops"}};
  job.parameterized = model::ParameterizedJobConfig{.payload = std::move(payload),
                                                    .meta_required = std::move(required),
                                                    .meta_optional = std::move(optional)};
  return job;
}

class PeriodicTest : public test::ServerFixture {
 protected:
  std::vector<std::string> Children(const std::string& parent = "report") {
    std::vector<std::string> ids;
    for (const JobPtr& j : server_.state().ChildJobs("default", parent))
      ids.push_back(j->id);
    return ids;
  }
  // Advances the clock by `d` and runs what that made ready (the periodic loop's pass;
  // without a state DB its writes complete at once).
  void Advance(common::Duration d) {
    clock_.Advance(d);
    io_.restart();
    io_.poll();
  }
  std::string ChildAt(common::Time t) {
    return "report/periodic-" + std::to_string(UnixSeconds(t));
  }
};

TEST(NextPeriodicLaunchTest, EarliestOfTheCronsInTheTimeZone) {
  // 2023-11-14T22:13:20Z.
  const common::Time t = common::FromUnixNanos(1'700'000'000'000'000'000);
  model::PeriodicConfig p{
      .specs = {"0 23 * * *", "30 22 * * *"}, .spec_type = "cron", .time_zone = "UTC"};
  EXPECT_EQ(UnixSeconds(*NextPeriodicLaunch(p, t)), 1'700'000'000 + 16 * 60 + 40);
  // 23:00 in New York (UTC-5 in November) is 04:00 UTC the next day.
  p = {.spec = "0 23 * * *", .spec_type = "cron", .time_zone = "America/New_York"};
  EXPECT_EQ(UnixSeconds(*NextPeriodicLaunch(p, t)), 1'700'020'800);
  p = {.spec = "0 0 30 2 *", .spec_type = "cron", .time_zone = "UTC"};  // never
  EXPECT_FALSE(NextPeriodicLaunch(p, t));
}

TEST_F(PeriodicTest, ATemplateRunsNothingAndLaunchesChildrenOnItsCron) {
  const common::Time registered = clock_.Now();
  auto resp = server_.RegisterJob(PeriodicJob("* * * * *"));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->eval_id, "");
  EXPECT_TRUE(server_.state().EvalsByJob("default", "report").empty());
  EXPECT_EQ(server_.state().GetJob("default", "report")->status, "running");
  ASSERT_TRUE(server_.state().LastPeriodicLaunch("default", "report"));
  EXPECT_EQ(server_.state().LastPeriodicLaunch("default", "report")->launch,
            common::ToUnixNanos(registered));

  // Registered at :20 past the minute: the first launch is 40 s later.
  Advance(39s);
  EXPECT_TRUE(Children().empty());
  Advance(1s);
  const common::Time first = clock_.Now();
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 1; }));
  EXPECT_THAT(Children(), ElementsAre(ChildAt(first)));
  JobPtr child = server_.state().GetJob("default", ChildAt(first));
  EXPECT_EQ(child->parent_id, "report");
  EXPECT_EQ(child->name, child->id);
  EXPECT_FALSE(child->periodic);
  // Its first evaluation (a blocked one may follow: no node).
  std::vector<EvalPtr> evals = server_.state().EvalsByJob("default", child->id);
  ASSERT_FALSE(evals.empty());
  std::sort(evals.begin(), evals.end(),
            [](const EvalPtr& a, const EvalPtr& b) { return a->create_index < b->create_index; });
  EXPECT_EQ(evals[0]->triggered_by, "periodic-job");
  EXPECT_EQ(server_.state().LastPeriodicLaunch("default", "report")->launch,
            common::ToUnixNanos(first));

  Advance(60s);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 2; }));
  // The parent's summary counts its children (no node: they wait, pending).
  model::JobSummary summary =
      server_.state().JobSummary(*server_.state().GetJob("default", "report"));
  EXPECT_EQ(summary.children.pending + summary.children.running + summary.children.dead, 2);

  // Stopped, it launches no more; its children stay.
  ASSERT_TRUE(server_.DeregisterJob("default", "report", /*purge=*/false).ok());
  EXPECT_TRUE(server_.state().EvalsByJob("default", "report").empty());
  EXPECT_EQ(server_.state().GetJob("default", "report")->status, "dead");
  Advance(120s);
  EXPECT_EQ(Children().size(), 2u);
}

TEST_F(PeriodicTest, ProhibitOverlapSkipsALaunchWhileAChildIsNotDead) {
  ASSERT_TRUE(server_.RegisterJob(PeriodicJob("* * * * *", /*prohibit_overlap=*/true)).ok());
  Advance(40s);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 1; }));
  const std::string first = Children()[0];
  // The child cannot be placed (no node): it stays pending, and the next launch is
  // skipped, though recorded.
  Advance(60s);
  const common::Time skipped = clock_.Now();
  ASSERT_TRUE(testing::RunUntil(io_, [&] {
    return server_.state().LastPeriodicLaunch("default", "report")->launch ==
           common::ToUnixNanos(skipped);
  }));
  EXPECT_THAT(Children(), ElementsAre(first));
  // A forced launch does not wait for it.
  auto forced = testing::Await(io_, server_.ForcePeriodicDurably("default", "report"));
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ(Children().size(), 2u);
  EXPECT_EQ(server_.state().GetEval(forced->eval_id)->job_id, ChildAt(clock_.Now()));
  // Once no child is left, launches go on.
  for (const std::string& id : Children())
    ASSERT_TRUE(server_.DeregisterJob("default", id, /*purge=*/true).ok());
  Advance(60s);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 1; }));
  EXPECT_THAT(Children(), ElementsAre(ChildAt(clock_.Now())));
}

TEST_F(PeriodicTest, ForceRefusals) {
  auto force = [&](const std::string& id) {
    return testing::Await(io_, server_.ForcePeriodicDurably("default", id)).status();
  };
  EXPECT_EQ(force("nope").message(), "job not found");
  EXPECT_TRUE(absl::IsNotFound(force("nope")));
  ASSERT_TRUE(server_.RegisterJob(test::MakeJob("web")).ok());
  EXPECT_EQ(force("web").message(), "can't force launch non-periodic job");
  model::Job disabled = PeriodicJob("@daily");
  disabled.periodic->enabled = false;
  ASSERT_TRUE(server_.RegisterJob(disabled).ok());
  EXPECT_EQ(force("report").message(),
            "force launch for job \"report\" failed: can't force run non-tracked job report "
            "(default)");
  EXPECT_TRUE(Children().empty());
}

TEST_F(PeriodicTest, LaunchesMissedWithoutALeaderAreMadeUpForByOne) {
  ASSERT_TRUE(server_.RegisterJob(PeriodicJob("* * * * *")).ok());
  server_.RevokeLeadership();
  Advance(10min);
  EXPECT_TRUE(Children().empty());
  server_.EstablishLeadership();
  const common::Time back = clock_.Now();
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return !Children().empty(); }));
  Advance(1s);
  EXPECT_THAT(Children(), ElementsAre(ChildAt(back)));
  // Then the schedule goes on from the next minute.
  Advance(39s);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 2; }));
}

TEST_F(PeriodicTest, ANewVersionCountsItsScheduleFromItsRegistration) {
  ASSERT_TRUE(server_.RegisterJob(PeriodicJob("@daily")).ok());
  Advance(10h);  // past 00:00 UTC: one daily launch
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 1; }));
  // An hourly spec registered now does not make up for the hours since that launch.
  Advance(5h);
  ASSERT_TRUE(server_.RegisterJob(PeriodicJob("0 * * * *")).ok());
  Advance(1s);
  EXPECT_EQ(Children().size(), 1u);
}

TEST_F(PeriodicTest, StartingAStoppedJobAgainDoesNotMakeUpForItsLaunches) {
  ASSERT_TRUE(server_.RegisterJob(PeriodicJob("* * * * *")).ok());
  ASSERT_TRUE(server_.DeregisterJob("default", "report", /*purge=*/false).ok());
  Advance(10min);
  model::Job again = PeriodicJob("* * * * *");
  ASSERT_TRUE(server_.RegisterJob(again).ok());
  Advance(1s);
  EXPECT_TRUE(Children().empty());
  Advance(60s);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Children().size() == 1; }));
}

TEST_F(PeriodicTest, ATemplateIsNeverEvaluated) {
  model::Job job = PeriodicJob("@daily");
  job.type = model::kJobTypeSysbatch;
  ASSERT_TRUE(server_.RegisterJob(job).ok());
  model::Job param = ParameterizedJob("optional", {});
  param.type = model::kJobTypeSysbatch;
  ASSERT_TRUE(server_.RegisterJob(param).ok());
  // A node joining evaluates sysbatch jobs, not templates.
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  EXPECT_TRUE(server_.state().EvalsByJob("default", "report").empty());
  EXPECT_TRUE(server_.state().EvalsByJob("default", "render").empty());
  auto evaluate = [&](const std::string& id) {
    return testing::Await(io_, server_.EvaluateJobDurably("default", id, false)).status();
  };
  EXPECT_EQ(evaluate("report").message(), "can't evaluate periodic job");
  EXPECT_EQ(evaluate("render").message(), "can't evaluate parameterized job");
  // Scaling a template changes the count its children get, and evaluates nothing.
  auto scaled =
      testing::Await(io_, server_.ScaleJobDurably(Server::ScaleRequest{
                              .ns = "default", .job_id = "render", .group = "web", .count = 3}));
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  EXPECT_EQ(scaled->eval_id, "");
  EXPECT_EQ(server_.state().GetJob("default", "render")->task_groups[0].count, 3);
  EXPECT_TRUE(server_.state().EvalsByJob("default", "render").empty());
}

TEST(PeriodicPersistTest, LaunchRecordsSurviveARestartAndTravelInSnapshots) {
  testing::TempDir dir;
  asio::io_context io;
  common::FakeClock clock;
  {
    StateStore s(io.get_executor(), clock);
    auto db = OpenServerStore(dir.path().string());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(s.Attach(std::move(*db)).ok());
    s.UpsertJob(PeriodicJob("@hourly"));
    s.SetPeriodicLaunch("default", "report", 1234);
    EXPECT_TRUE(testing::Await(io, s.Flush()).ok());
  }
  StateStore s(io.get_executor(), clock);
  auto db = OpenServerStore(dir.path().string());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(s.Attach(std::move(*db)).ok());
  ASSERT_TRUE(s.LastPeriodicLaunch("default", "report"));
  EXPECT_EQ(s.LastPeriodicLaunch("default", "report")->launch, 1234);
  EXPECT_TRUE(s.GetJob("default", "report")->periodic);
  StateStore copy(io.get_executor(), clock);
  ASSERT_TRUE(copy.Restore(s.SnapshotRecords()()).ok());
  EXPECT_EQ(copy.LastPeriodicLaunch("default", "report"),
            s.LastPeriodicLaunch("default", "report"));
  // It goes with its job.
  EXPECT_TRUE(copy.DeleteJob("default", "report"));
  EXPECT_FALSE(copy.LastPeriodicLaunch("default", "report"));
}

class DispatchTest : public test::ServerFixture {
 protected:
  absl::StatusOr<model::DispatchResponse> Dispatch(model::DispatchRequest r) {
    r.ns = "default";
    if (r.job_id.empty())
      r.job_id = "render";
    return testing::Await(io_, server_.DispatchJobDurably(std::move(r)));
  }
};

TEST_F(DispatchTest, AChildGetsThePayloadAndMetaAndIsEvaluated) {
  auto registered = server_.RegisterJob(ParameterizedJob("required", {"input"}, {"color"}));
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_EQ(registered->eval_id, "");
  EXPECT_EQ(server_.state().GetJob("default", "render")->status, "running");
  auto resp = Dispatch({.payload = "hello", .meta = {{"input", "a.txt"}}});
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_THAT(resp->dispatched_job_id,
              ::testing::MatchesRegex(R"(render/dispatch-[0-9]+-[0-9a-f]{8})"));
  JobPtr child = server_.state().GetJob("default", resp->dispatched_job_id);
  ASSERT_NE(child, nullptr);
  EXPECT_TRUE(child->dispatched);
  EXPECT_EQ(child->parent_id, "render");
  EXPECT_EQ(child->payload, "hello");
  EXPECT_EQ(child->meta,
            (std::map<std::string, std::string>{{"owner", "ops"}, {"input", "a.txt"}}));
  EXPECT_FALSE(child->IsParameterized());
  EXPECT_EQ(server_.state().GetEval(resp->eval_id)->job_id, child->id);
  EXPECT_EQ(resp->job_create_index, child->create_index);

  // With an ID prefix template, and a token: a retry returns the same child.
  auto first = Dispatch({.payload = "x",
                         .meta = {{"input", "b"}},
                         .idempotency_token = "t1",
                         .id_prefix_template = "nightly"});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->dispatched_job_id, HasSubstr("render/dispatch-nightly-"));
  auto retry = Dispatch({.payload = "y", .meta = {{"input", "c"}}, .idempotency_token = "t1"});
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_EQ(retry->dispatched_job_id, first->dispatched_job_id);
  EXPECT_EQ(retry->eval_id, "");
  EXPECT_EQ(server_.state().ChildJobs("default", "render").size(), 2u);
  model::JobSummary summary =
      server_.state().JobSummary(*server_.state().GetJob("default", "render"));
  EXPECT_EQ(summary.children.pending + summary.children.running + summary.children.dead, 2);
}

TEST_F(DispatchTest, RefusalsChangeNothing) {
  auto web = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(web.ok()) << web.status();
  ASSERT_TRUE(EvalDone(web->eval_id));
  ASSERT_TRUE(server_.RegisterJob(ParameterizedJob("required", {"input"}, {"color"})).ok());
  const uint64_t index = server_.state().LatestIndex();
  auto refused = [&](model::DispatchRequest r) {
    auto resp = Dispatch(std::move(r));
    EXPECT_FALSE(resp.ok());
    return std::string(resp.status().message());
  };
  EXPECT_EQ(refused({.job_id = "nope"}), "parameterized job \"nope\" not found");
  EXPECT_EQ(refused({.job_id = "web"}), "Specified job \"web\" is not a parameterized job");
  EXPECT_EQ(refused({.meta = {{"input", "a"}}}),
            "Payload is not provided but required by parameterized job");
  EXPECT_EQ(refused({.payload = std::string(16 * 1024 + 1, 'x'), .meta = {{"input", "a"}}}),
            "Payload exceeds maximum size; 16385 > 16384");
  EXPECT_EQ(refused({.payload = "p", .meta = {{"input", "a"}, {"size", "9"}, {"zone", "b"}}}),
            "Dispatch request included unpermitted metadata keys: [size zone]");
  EXPECT_EQ(refused({.payload = "p", .meta = {{"color", "red"}}}),
            "Dispatch did not provide required meta keys: [input]");
  EXPECT_THAT(refused({.payload = "p", .meta = {{"input", "a"}}, .id_prefix_template = "a b"}),
              HasSubstr("Job ID contains a space"));
  EXPECT_EQ(server_.state().LatestIndex(), index);
  EXPECT_TRUE(server_.state().ChildJobs("default", "render").empty());

  ASSERT_TRUE(server_.RegisterJob(ParameterizedJob("forbidden", {})).ok());
  EXPECT_EQ(refused({.payload = "p"}), "Payload provided but forbidden by parameterized job");
  ASSERT_TRUE(server_.DeregisterJob("default", "render", /*purge=*/false).ok());
  EXPECT_EQ(refused({}), "Specified job \"render\" is stopped");
}

}  // namespace
}  // namespace drover::server
