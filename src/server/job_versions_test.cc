// Job versions on the server: how many are kept, stability, revert, evaluate with
// ForceReschedule, and plans with their annotated diffs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/server.h"
#include "server/server_fixture.h"
#include "server/test_fixtures.h"
#include "testing/await.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using ::testing::ElementsAre;

class JobVersionsTest : public test::ServerFixture {
 protected:
  JobVersionsTest() { EXPECT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok()); }
  // Registers and waits for the evaluation; returns the stored version.
  uint64_t Register(const model::Job& job) {
    auto resp = server_.RegisterJob(job);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (resp.ok()) {
      EXPECT_TRUE(EvalDone(resp->eval_id));
    }
    return server_.state().GetJob("default", job.id)->version;
  }
  std::vector<uint64_t> Versions(const std::string& id) {
    std::vector<uint64_t> out;
    for (const JobPtr& j : server_.state().JobVersions("default", id))
      out.push_back(j->version);
    return out;
  }
  model::JobPlan Plan(const model::Job& job) {
    auto prepared = codec::PrepareJob(job, "global");
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    auto plan = testing::Await(io_, server_.PlanJob(*std::move(prepared), /*diff=*/true));
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? *plan : model::JobPlan{};
  }
};

TEST_F(JobVersionsTest, KeepsTheNewestSixAndTheNewestStableOneBesides) {
  model::Job job = test::MakeJob("web");
  for (int i = 0; i < 3; ++i) {
    job.meta["v"] = std::to_string(i);
    Register(job);
  }
  auto stable = testing::Await(io_, server_.SetJobStabilityDurably("default", "web", 1, true));
  ASSERT_TRUE(stable.ok()) << stable.status();
  for (int i = 3; i < 10; ++i) {
    job.meta["v"] = std::to_string(i);
    Register(job);
  }
  // 9..4, and the stable 1 besides.
  EXPECT_THAT(Versions("web"), ElementsAre(9, 8, 7, 6, 5, 4, 1));
  // An unchanged registration is no new version.
  EXPECT_EQ(Register(job), 9u);
  EXPECT_THAT(Versions("web"), ElementsAre(9, 8, 7, 6, 5, 4, 1));
}

TEST_F(JobVersionsTest, WithOneTrackedVersionTheCurrentOneStaysAndTheStableOneBesides) {
  server_.state().set_tracked_versions(1);
  model::Job job = test::MakeJob("web");
  Register(job);
  ASSERT_TRUE(testing::Await(io_, server_.SetJobStabilityDurably("default", "web", 0, true)).ok());
  for (int i = 1; i < 4; ++i) {
    job.meta["v"] = std::to_string(i);
    Register(job);
    EXPECT_THAT(Versions("web"), ElementsAre(i, 0));
  }
  EXPECT_EQ(server_.state().GetJob("default", "web")->version, 3u);
}

TEST_F(JobVersionsTest, StabilityOfAVersionThatIsNotKeptIsRefused) {
  Register(test::MakeJob("web"));
  auto done = testing::Await(io_, server_.SetJobStabilityDurably("default", "web", 0, true));
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(server_.state().GetJob("default", "web")->stable);
  auto missing = testing::Await(io_, server_.SetJobStabilityDurably("default", "web", 4, true));
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "job \"web\" in namespace \"default\" at version 4 not found");
}

TEST_F(JobVersionsTest, RevertRegistersTheOldSpecAsANewVersion) {
  model::Job job = test::MakeJob("web");
  Register(job);
  job.task_groups[0].tasks[0].env["X"] = "1";
  Register(job);
  auto current = [&] {
    return testing::Await(io_, server_.RevertJobDurably("default", "web", 1, std::nullopt));
  };
  EXPECT_EQ(current().status().message(), "can't revert to current version");
  auto missing = testing::Await(io_, server_.RevertJobDurably("default", "web", 7, std::nullopt));
  EXPECT_EQ(missing.status().message(),
            "job \"web\" in namespace \"default\" at version 7 not found");
  auto stale = testing::Await(io_, server_.RevertJobDurably("default", "web", 0, uint64_t{0}));
  EXPECT_EQ(stale.status().message(), "Current job has version 1; enforcing version 0");
  auto no_job = testing::Await(io_, server_.RevertJobDurably("default", "nope", 0, std::nullopt));
  EXPECT_TRUE(absl::IsNotFound(no_job.status()));
  EXPECT_THAT(Versions("web"), ElementsAre(1, 0));  // none of these changed anything

  auto reverted = testing::Await(io_, server_.RevertJobDurably("default", "web", 0, uint64_t{1}));
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  ASSERT_TRUE(EvalDone(reverted->eval_id));
  JobPtr now = server_.state().GetJob("default", "web");
  EXPECT_EQ(now->version, 2u);
  EXPECT_TRUE(now->task_groups[0].tasks[0].env.empty());
  // The allocation was replaced for the old spec.
  int running = 0;
  for (const AllocPtr& a : server_.state().AllocsByJob("default", "web")) {
    if (a->desired_status == model::kDesiredRun) {
      ++running;
      EXPECT_EQ(a->job->version, 2u);
    }
  }
  EXPECT_EQ(running, 1);
}

TEST_F(JobVersionsTest, EvaluateWithForceRescheduleReplacesAFailedAllocationNow) {
  model::Job job = test::MakeJob("web");
  // One attempt an hour after a day's delay: only a forced reschedule replaces it now.
  job.task_groups[0].reschedule_policy =
      model::ReschedulePolicy{.attempts = 1,
                              .interval = std::chrono::hours(48),
                              .delay = std::chrono::hours(24),
                              .delay_function = "constant",
                              .max_delay = std::chrono::hours(24),
                              .unlimited = false};
  Register(job);
  AllocPtr first = server_.state().AllocsByJob("default", "web").at(0);
  model::AllocClientUpdate failed;
  failed.id = first->id;
  failed.node_id = "n1";
  failed.client_status = model::kClientFailed;
  ASSERT_TRUE(server_.UpdateAllocsFromClient("n1", {failed}).ok());
  testing::RunUntil(io_, [&] { return server_.pending_evals() == 0; });
  EXPECT_EQ(server_.state().AllocsByJob("default", "web").size(), 1u);

  auto resp = testing::Await(io_, server_.EvaluateJobDurably("default", "web", true));
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_TRUE(EvalDone(resp->eval_id));
  EXPECT_EQ(server_.state().GetEval(resp->eval_id)->triggered_by, "job-register");
  auto allocs = server_.state().AllocsByJob("default", "web");
  ASSERT_EQ(allocs.size(), 2u);
  EXPECT_FALSE(server_.state().GetAlloc(first->id)->next_allocation.empty());
  auto missing = testing::Await(io_, server_.EvaluateJobDurably("default", "nope", false));
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
}

TEST_F(JobVersionsTest, PlanSeparatesInPlaceFromDestructiveUpdatesAndStoresNothing) {
  model::Job job = test::MakeJob("web", 1);
  Register(job);
  const uint64_t jmi = server_.state().GetJob("default", "web")->job_modify_index;
  const uint64_t index = server_.state().LatestIndex();

  model::Job more = job;
  more.task_groups[0].count = 3;
  model::JobPlan count = Plan(more);
  EXPECT_EQ(count.job_modify_index, jmi);
  EXPECT_EQ(count.desired_tg_updates.at("web"),
            (model::DesiredUpdates{.place = 2, .in_place_update = 1}));
  ASSERT_TRUE(count.diff.has_value());
  EXPECT_EQ(count.diff->type, model::kDiffEdited);
  const model::TaskGroupDiff& g = count.diff->task_groups.at(0);
  EXPECT_EQ(g.updates, (std::map<std::string, uint64_t>{{"create", 2}, {"in-place update", 1}}));
  ASSERT_EQ(g.fields.size(), 1u);
  EXPECT_EQ(g.fields[0].name, "Count");
  EXPECT_THAT(g.fields[0].annotations, ElementsAre("forces create"));

  model::Job changed = job;
  changed.task_groups[0].tasks[0].env["X"] = "1";
  model::JobPlan destructive = Plan(changed);
  EXPECT_EQ(destructive.desired_tg_updates.at("web"),
            (model::DesiredUpdates{.destructive_update = 1}));
  EXPECT_THAT(destructive.diff->task_groups.at(0).tasks.at(0).annotations,
              ElementsAre("forces create/destroy update"));

  model::JobPlan same = Plan(job);
  EXPECT_EQ(same.diff->type, model::kDiffNone);
  EXPECT_EQ(same.desired_tg_updates.at("web"), (model::DesiredUpdates{.ignore = 1}));

  model::Job huge = job;
  huge.task_groups[0].tasks[0].resources.memory_mb = 1 << 20;
  model::JobPlan failing = Plan(huge);
  EXPECT_TRUE(failing.failed_tg_allocs.contains("web"));

  // Nothing was stored or scheduled.
  EXPECT_EQ(server_.state().LatestIndex(), index);
  EXPECT_EQ(server_.state().JobVersions("default", "web").size(), 1u);
}

TEST_F(JobVersionsTest, JobMetaForcesADestructiveUpdateAndTheRescheduleBlockDoesNot) {
  model::Job job = test::MakeJob("web", 1);
  Register(job);
  model::Job policy = job;
  policy.task_groups[0].reschedule_policy =
      model::ReschedulePolicy{.attempts = 3,
                              .interval = std::chrono::hours(1),
                              .delay = std::chrono::seconds(30),
                              .delay_function = "exponential",
                              .max_delay = std::chrono::hours(1),
                              .unlimited = false};
  EXPECT_EQ(Plan(policy).desired_tg_updates.at("web"),
            (model::DesiredUpdates{.in_place_update = 1}));
  model::Job meta = job;
  meta.meta["owner"] = "ops";  // in every task's environment
  EXPECT_EQ(Plan(meta).desired_tg_updates.at("web"),
            (model::DesiredUpdates{.destructive_update = 1}));
  model::Job elsewhere = job;
  elsewhere.datacenters = {"dc2"};  // n1 is in dc1
  model::JobPlan moved = Plan(elsewhere);
  EXPECT_EQ(moved.desired_tg_updates.at("web").destructive_update, 1u);
  EXPECT_TRUE(moved.failed_tg_allocs.contains("web"));
}

}  // namespace
}  // namespace drover::server
