// Deployments end to end on one server: the scheduler's rollout (rollout.h), the state's
// counters, the watcher (health, deadlines, auto-promotion, auto-revert) and the
// deployment writes. Clients are played by reporting allocation health directly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/server.h"
#include "server/server_fixture.h"
#include "server/test_fixtures.h"
#include "testing/await.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

model::Job RollingJob(const std::string& id, int count, int canary = 0) {
  model::Job job = test::MakeJob(id, count);
  job.task_groups[0].update = model::UpdateStrategy{.stagger = std::chrono::seconds(30),
                                                    .max_parallel = 1,
                                                    .health_check = "task_states",
                                                    .min_healthy_time = std::chrono::seconds(10),
                                                    .healthy_deadline = std::chrono::minutes(5),
                                                    .progress_deadline = std::chrono::minutes(10),
                                                    .canary = canary};
  return job;
}

class DeploymentTest : public test::ServerFixture {
 protected:
  DeploymentTest() { EXPECT_TRUE(server_.RegisterNode(test::MakeNode("n1", 64000, 64000)).ok()); }

  std::string Register(const model::Job& job) {
    auto resp = server_.RegisterJob(job);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok())
      return "";
    EXPECT_TRUE(EvalDone(resp->eval_id));
    return resp->eval_id;
  }
  // The job's allocations meant to run.
  std::vector<AllocPtr> Live(const std::string& job) {
    std::vector<AllocPtr> out;
    for (const AllocPtr& a : server_.state().AllocsByJob("default", job)) {
      if (a->desired_status == model::kDesiredRun)
        out.push_back(a);
    }
    return out;
  }
  DeploymentPtr Latest(const std::string& job) {
    return server_.state().LatestDeployment("default", job);
  }
  // What a client reports once it judged the allocation.
  void Report(const AllocPtr& a, bool healthy) {
    model::AllocClientUpdate u{
        .id = a->id,
        .node_id = a->node_id,
        .client_status = model::kClientRunning,
        .deployment_status =
            model::AllocDeploymentStatus{.healthy = healthy, .timestamp = clock_.Now()},
        .deployment_id = a->deployment_id};
    ASSERT_TRUE(server_.UpdateAllocsFromClient(a->node_id, {u}).ok());
  }
  // Reports every live allocation of the job without health as healthy, once; returns
  // how many it reported.
  int ReportAllHealthy(const std::string& job) {
    int n = 0;
    for (const AllocPtr& a : Live(job)) {
      if (!a->deployment_status || !a->deployment_status->healthy) {
        Report(a, true);
        ++n;
      }
    }
    return n;
  }
  // Registers a version of the "web" job and reports its allocations healthy: true
  // once its deployment succeeded.
  bool RegisterStable(const model::Job& job) {
    Register(job);
    ReportAllHealthy("web");
    return WaitStatus("web", model::kDeploymentSuccessful);
  }
  // Waits until the job's latest deployment has `status`.
  bool WaitStatus(const std::string& job, const std::string& status) {
    return testing::RunUntil(io_, [&] {
      DeploymentPtr d = Latest(job);
      return d && d->status == status;
    });
  }
  // Live allocations without a health verdict.
  int Unjudged(const std::string& job) {
    int n = 0;
    for (const AllocPtr& a : Live(job))
      n += !a->deployment_status || !a->deployment_status->healthy ? 1 : 0;
    return n;
  }
  // Waits until the pending evaluations are done.
  bool Settle() {
    return testing::RunUntil(io_, [&] {
      for (const EvalPtr& e : server_.state().ListEvals("*", "")) {
        if (e->status == model::kEvalPending)
          return false;
      }
      return server_.pending_evals() == 0;
    });
  }
};

TEST_F(DeploymentTest, ANewJobRollsOutAndItsVersionTurnsStableOnceHealthy) {
  const std::string eval = Register(RollingJob("web", 2));
  DeploymentPtr d = Latest("web");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->status, model::kDeploymentRunning);
  EXPECT_EQ(d->status_description, "Deployment is running");
  EXPECT_EQ(server_.state().GetEval(eval)->deployment_id, d->id);
  const model::DeploymentState& s = d->task_groups.at("web");
  EXPECT_EQ(s.desired_total, 2);
  EXPECT_EQ(s.placed_allocs, 2);
  EXPECT_EQ(s.require_progress_by, clock_.Now() + std::chrono::minutes(10));
  for (const AllocPtr& a : Live("web"))
    EXPECT_EQ(a->deployment_id, d->id);

  EXPECT_EQ(ReportAllHealthy("web"), 2);
  ASSERT_TRUE(WaitStatus("web", model::kDeploymentSuccessful));
  EXPECT_EQ(Latest("web")->status_description, "Deployment completed successfully");
  EXPECT_EQ(Latest("web")->task_groups.at("web").healthy_allocs, 2);
  EXPECT_TRUE(server_.state().GetJob("default", "web")->stable);
}

TEST_F(DeploymentTest, MaxParallelReplacesOneAllocationAtATime) {
  model::Job job = RollingJob("web", 3);
  ASSERT_TRUE(RegisterStable(job));
  const std::string first = Latest("web")->id;

  job.task_groups[0].tasks[0].env["V"] = "2";  // destructive
  Register(job);
  ASSERT_TRUE(Settle());
  DeploymentPtr d = Latest("web");
  ASSERT_NE(d->id, first);
  for (int round = 0; round < 3; ++round) {
    // One new allocation at a time, the others of the old version still running.
    ASSERT_TRUE(testing::RunUntil(io_, [&] { return Unjudged("web") > 0; })) << round;
    ASSERT_TRUE(Settle());
    EXPECT_EQ(Unjudged("web"), 1) << "round " << round;
    EXPECT_EQ(Live("web").size(), 3u);
    ReportAllHealthy("web");
  }
  ASSERT_TRUE(WaitStatus("web", model::kDeploymentSuccessful));
  for (const AllocPtr& a : Live("web"))
    EXPECT_EQ(a->job->version, 1u);
  EXPECT_EQ(Latest("web")->task_groups.at("web").placed_allocs, 3);
}

TEST_F(DeploymentTest, CanariesWaitForPromotionThenTheRestRollsOut) {
  model::Job job = RollingJob("web", 2, /*canary=*/1);
  ASSERT_TRUE(RegisterStable(job));

  job.task_groups[0].tasks[0].env["V"] = "2";
  Register(job);
  ASSERT_TRUE(Settle());
  DeploymentPtr d = Latest("web");
  EXPECT_EQ(d->status_description, "Deployment is running but requires manual promotion");
  EXPECT_EQ(d->task_groups.at("web").desired_canaries, 1);
  ASSERT_EQ(d->task_groups.at("web").placed_canaries.size(), 1u);
  EXPECT_EQ(Live("web").size(), 3u);  // two old ones and the canary
  const AllocPtr canary = server_.state().GetAlloc(d->task_groups.at("web").placed_canaries[0]);
  EXPECT_TRUE(canary->deployment_status && canary->deployment_status->canary);

  auto early = testing::Await(io_, server_.PromoteDeploymentDurably(d->id, true, {}));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().message(), "Task group \"web\" has 0/1 healthy allocations");

  Report(canary, true);
  ASSERT_TRUE(Settle());
  // Healthy canaries wait for a person: the deployment does not go on.
  EXPECT_EQ(Live("web").size(), 3u);
  auto promoted = testing::Await(io_, server_.PromoteDeploymentDurably(d->id, true, {}));
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  EXPECT_FALSE(promoted->eval_id.empty());
  ASSERT_TRUE(Settle());
  EXPECT_TRUE(Latest("web")->task_groups.at("web").promoted);
  EXPECT_FALSE(server_.state().GetAlloc(canary->id)->deployment_status->canary);
  // The old allocation beside the canary is gone; the other is being replaced.
  while (Latest("web")->status == model::kDeploymentRunning) {
    ASSERT_TRUE(testing::RunUntil(io_, [&] {
      return Unjudged("web") > 0 || Latest("web")->status != model::kDeploymentRunning;
    }));
    ASSERT_TRUE(Settle());
    ASSERT_LE(Live("web").size(), 2u);
    ReportAllHealthy("web");
    ASSERT_TRUE(testing::RunUntil(io_, [&] {
      return Unjudged("web") > 0 || Latest("web")->status != model::kDeploymentRunning;
    }));
  }
  EXPECT_EQ(Latest("web")->status, model::kDeploymentSuccessful);
  for (const AllocPtr& a : Live("web"))
    EXPECT_EQ(a->job->version, 1u);
}

// Without a progress deadline, the first unhealthy allocation fails the deployment.
TEST_F(DeploymentTest, AnUnhealthyAllocationFailsTheDeploymentAndAutoRevertRollsBack) {
  model::Job job = RollingJob("web", 1);
  job.task_groups[0].update->auto_revert = true;
  job.task_groups[0].update->progress_deadline = common::Duration{0};
  ASSERT_TRUE(RegisterStable(job));

  job.task_groups[0].tasks[0].env["BROKEN"] = "1";
  Register(job);
  ASSERT_TRUE(Settle());
  const DeploymentPtr bad = Latest("web");
  for (const AllocPtr& a : Live("web")) {
    if (a->deployment_id == bad->id)
      Report(a, false);
  }
  ASSERT_TRUE(testing::RunUntil(io_, [&] {
    return server_.state().GetDeployment(bad->id)->status == model::kDeploymentFailed;
  }));
  EXPECT_EQ(server_.state().GetDeployment(bad->id)->status_description,
            "Failed due to unhealthy allocations - rolling back to job version 0");
  const JobPtr now = server_.state().GetJob("default", "web");
  EXPECT_EQ(now->version, 2u);
  EXPECT_EQ(now->task_groups[0].tasks[0].env.count("BROKEN"), 0u);
  for (const JobPtr& v : server_.state().JobVersions("default", "web")) {
    if (v->version == 1) {
      EXPECT_FALSE(v->stable);
    }
  }
}

// With a progress deadline, an unhealthy allocation is replaced as its reschedule
// policy allows and the deployment goes on; once the policy allows no more, the
// deadline fails it.
TEST_F(DeploymentTest, UnhealthyAllocationsAreReplacedUntilTheProgressDeadline) {
  model::Job job = RollingJob("web", 1);
  job.task_groups[0].reschedule_policy = model::ReschedulePolicy{.attempts = 1,
                                                                 .interval = std::chrono::hours(1),
                                                                 .delay = std::chrono::seconds(5),
                                                                 .delay_function = "constant"};
  ASSERT_TRUE(RegisterStable(job));

  job.task_groups[0].tasks[0].env["V"] = "2";
  Register(job);
  ASSERT_TRUE(Settle());
  const DeploymentPtr d = Latest("web");
  ASSERT_EQ(Live("web").size(), 1u);
  const AllocPtr first = Live("web")[0];
  ASSERT_EQ(first->deployment_id, d->id);
  const common::Time reported = clock_.Now();
  Report(first, false);  // marked, then replaced once the policy's 5 s delay has passed
  ASSERT_TRUE(testing::RunUntil(io_, [&] {
    return server_.state().GetAlloc(first->id)->desired_transition.reschedule.value_or(false);
  }));
  ASSERT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] {
    const std::vector<AllocPtr> live = Live("web");
    return live.size() == 1 && live[0]->id != first->id;
  }));
  const AllocPtr stopped = server_.state().GetAlloc(first->id);
  EXPECT_EQ(stopped->desired_status, model::kDesiredStop);
  EXPECT_EQ(stopped->desired_description, "alloc was rescheduled because it failed");
  const AllocPtr second = Live("web")[0];
  EXPECT_EQ(second->previous_allocation, first->id);
  EXPECT_GE(common::FromUnixNanos(second->create_time), reported + std::chrono::seconds(5));
  EXPECT_EQ(stopped->next_allocation, second->id);
  EXPECT_EQ(second->deployment_id, d->id);
  EXPECT_EQ(Latest("web")->status, model::kDeploymentRunning);

  // The one attempt is spent: the second unhealthy allocation stays, and the deadline
  // fails the deployment.
  Report(second, false);
  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return Latest("web")->status == model::kDeploymentFailed; }));
  EXPECT_EQ(Latest("web")->status_description, "Failed due to progress deadline");
  EXPECT_TRUE(server_.state().GetAlloc(second->id)->next_allocation.empty());
}

// What a node says of health: never dated after the servers' clock (a future time would
// push the progress deadline out), ignored where health is set by hand, and a verdict
// changed by allocation-health moves the counters both ways.
TEST_F(DeploymentTest, NodeVerdictsAreCheckedAndOverridesMoveTheCounters) {
  model::Job job = RollingJob("web", 2);
  Register(job);
  const std::vector<AllocPtr> live = Live("web");
  ASSERT_EQ(live.size(), 2u);
  model::AllocClientUpdate u{
      .id = live[0]->id,
      .node_id = live[0]->node_id,
      .client_status = model::kClientRunning,
      .deployment_status =
          model::AllocDeploymentStatus{.healthy = true,
                                       .timestamp = clock_.Now() + std::chrono::hours(24 * 300)},
      .deployment_id = live[0]->deployment_id};
  ASSERT_TRUE(server_.UpdateAllocsFromClient(u.node_id, {u}).ok());
  const model::DeploymentState& s = Latest("web")->task_groups.at("web");
  EXPECT_EQ(s.healthy_allocs, 1);
  EXPECT_EQ(s.require_progress_by, clock_.Now() + std::chrono::minutes(10));

  const std::string id = Latest("web")->id;
  auto overridden = testing::Await(io_, server_.SetAllocHealthDurably(id, {}, {live[0]->id}));
  ASSERT_TRUE(overridden.ok()) << overridden.status();
  const model::DeploymentState& after = server_.state().GetDeployment(id)->task_groups.at("web");
  EXPECT_EQ(after.healthy_allocs, 0);
  EXPECT_EQ(after.unhealthy_allocs, 1);

  model::Job manual = RollingJob("manual", 1);
  manual.task_groups[0].update->health_check = "manual";
  Register(manual);
  ASSERT_EQ(Live("manual").size(), 1u);
  Report(Live("manual")[0], true);
  EXPECT_EQ(Latest("manual")->task_groups.at("web").healthy_allocs, 0);
  const AllocPtr judged = server_.state().GetAlloc(Live("manual")[0]->id);
  EXPECT_TRUE(!judged->deployment_status || !judged->deployment_status->healthy);
}

TEST_F(DeploymentTest, APassedProgressDeadlineFailsTheDeployment) {
  model::Job job = RollingJob("web", 1);
  job.task_groups[0].update->progress_deadline = std::chrono::minutes(6);
  Register(job);
  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return Latest("web")->status == model::kDeploymentFailed; }));
  EXPECT_EQ(Latest("web")->status_description, "Failed due to progress deadline");
}

TEST_F(DeploymentTest, CanariesThatAutoPromoteNeedNobody) {
  model::Job job = RollingJob("web", 1, /*canary=*/1);
  job.task_groups[0].update->auto_promote = true;
  ASSERT_TRUE(RegisterStable(job));
  job.task_groups[0].tasks[0].env["V"] = "2";
  Register(job);
  ASSERT_TRUE(Settle());
  EXPECT_EQ(Latest("web")->status_description, "Deployment is running pending automatic promotion");
  ReportAllHealthy("web");
  ASSERT_TRUE(WaitStatus("web", model::kDeploymentSuccessful));
  ASSERT_EQ(Live("web").size(), 1u);
  EXPECT_EQ(Live("web")[0]->job->version, 1u);
}

TEST_F(DeploymentTest, WritesRefuseWhatNomadRefuses) {
  Register(RollingJob("web", 1));
  const std::string id = Latest("web")->id;
  auto none = testing::Await(io_, server_.PromoteDeploymentDurably(id, true, {}));
  EXPECT_EQ(none.status().message(), "no canaries to promote");
  auto missing = testing::Await(io_, server_.FailDeploymentDurably("nope"));
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_EQ(missing.status().message(), "deployment not found");
  auto paused = testing::Await(io_, server_.PauseDeploymentDurably(id, true));
  ASSERT_TRUE(paused.ok()) << paused.status();
  EXPECT_TRUE(paused->eval_id.empty());
  EXPECT_EQ(Latest("web")->status_description, "Deployment is paused");
  auto failed = testing::Await(io_, server_.FailDeploymentDurably(id));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(Latest("web")->status_description, "Deployment marked as failed");
  auto again = testing::Await(io_, server_.FailDeploymentDurably(id));
  EXPECT_EQ(again.status().message(), "can't fail terminal deployment");
  auto health = testing::Await(io_, server_.SetAllocHealthDurably(id, {"x"}, {}));
  EXPECT_EQ(health.status().message(), "can't set health of allocations for a terminal deployment");
}

TEST_F(DeploymentTest, AStoppedJobCancelsItsDeployment) {
  Register(RollingJob("web", 1));
  auto resp = server_.DeregisterJob("default", "web", /*purge=*/false);
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(EvalDone(resp->eval_id));
  EXPECT_EQ(Latest("web")->status, model::kDeploymentCancelled);
  EXPECT_EQ(Latest("web")->status_description, "Cancelled because job is stopped");
}

TEST_F(DeploymentTest, JobsWithoutAnUpdateBlockHaveNoDeployments) {
  model::Job job = test::MakeJob("plain", 2);
  Register(job);
  job.task_groups[0].tasks[0].env["V"] = "2";
  Register(job);
  EXPECT_EQ(Latest("plain"), nullptr);
  int v1 = 0;
  for (const AllocPtr& a : Live("plain"))
    v1 += a->job->version == 1 ? 1 : 0;
  EXPECT_EQ(v1, 2);  // replaced at once
}

// A system job's update block rolls a new version out max_parallel nodes per stagger,
// driven by "rolling-update" follow-ups, without a deployment. An evaluation that comes
// meanwhile (a node joining) neither replaces early nor queues a second follow-up.
TEST_F(DeploymentTest, ASystemJobRollsOutMaxParallelNodesPerStagger) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2", 64000, 64000)).ok());
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n3", 64000, 64000)).ok());
  model::Job job = RollingJob("sys", 1);
  job.type = model::kJobTypeSystem;
  job.task_groups[0].reschedule_policy.reset();
  job.task_groups[0].update->stagger = std::chrono::seconds(4);  // within the nodes' TTL
  Register(job);
  ASSERT_EQ(Live("sys").size(), 3u);
  EXPECT_EQ(Latest("sys"), nullptr);
  auto of_version = [&](uint64_t v) {
    int n = 0;
    for (const AllocPtr& a : Live("sys"))
      n += a->job->version == v ? 1 : 0;
    return n;
  };
  auto rolling_pending = [&] {
    std::vector<EvalPtr> out;
    for (const EvalPtr& e : server_.state().EvalsByJob("default", "sys")) {
      if (e->triggered_by == "rolling-update" && e->status == model::kEvalPending)
        out.push_back(e);
    }
    return out;
  };

  job.task_groups[0].tasks[0].env["V"] = "2";  // destructive
  Register(job);
  EXPECT_EQ(of_version(1), 1);
  EXPECT_EQ(of_version(0), 2);
  ASSERT_EQ(rolling_pending().size(), 1u);
  EXPECT_EQ(rolling_pending()[0]->wait_until, clock_.Now() + std::chrono::seconds(4));

  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n4", 64000, 64000)).ok());
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return Live("sys").size() == 4; }));
  EXPECT_EQ(of_version(0), 2) << "replaced before the stagger passed";
  EXPECT_EQ(rolling_pending().size(), 1u);

  clock_.Advance(std::chrono::seconds(3));
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return of_version(0) == 1; }));
  clock_.Advance(std::chrono::seconds(4));
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return of_version(0) == 0; }));
  EXPECT_EQ(of_version(1), 4);
  ASSERT_TRUE(Settle());
  EXPECT_TRUE(rolling_pending().empty());
  EXPECT_EQ(Latest("sys"), nullptr);
}

}  // namespace
}  // namespace drover::server
