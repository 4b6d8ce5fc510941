#include <set>

#include <gtest/gtest.h>

#include "server/scheduler.h"
#include "server/test_fixtures.h"

namespace drover::server {
namespace {

class SystemSchedulerTest : public ::testing::Test, protected test::SchedulerHarness {
 protected:
  std::set<std::string> RunningOn() const {
    std::set<std::string> out;
    for (const auto& a : allocs_) {
      if (a.desired_status == "run" && !a.ClientTerminal())
        out.insert(a.node_id);
    }
    return out;
  }
  static model::Job SystemJob(const std::string& type = "system") {
    model::Job job = test::MakeJob("sys", 1, type);
    job.task_groups[0].reschedule_policy.reset();
    return job;
  }
};

TEST_F(SystemSchedulerTest, OneAllocationOnEveryNodeThatServesTheJob) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2"), test::MakeNode("n3")};
  nodes_[2].datacenter = "dc9";  // not the job's
  PlanResult plan = Pass(SystemJob());
  EXPECT_EQ(plan.placed, 2);
  EXPECT_TRUE(plan.failed_tg_allocs.empty());
  Apply(plan);
  EXPECT_EQ(RunningOn(), (std::set<std::string>{"n1", "n2"}));
  for (const auto& a : allocs_)
    EXPECT_EQ(a.name, "sys.web[0]");
  EXPECT_EQ(Pass(SystemJob()).upserts.size(), 0u);  // a second pass changes nothing

  // A node that joins later gets one too.
  nodes_.push_back(test::MakeNode("n4"));
  PlanResult joined = Pass(SystemJob());
  ASSERT_EQ(joined.placed, 1);
  EXPECT_EQ(joined.upserts[0].node_id, "n4");
  Apply(joined);
  EXPECT_EQ(RunningOn(), (std::set<std::string>{"n1", "n2", "n4"}));
}

TEST_F(SystemSchedulerTest, ANodeThatLeavesOrTurnsIneligibleLosesItsAllocation) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2"), test::MakeNode("n3")};
  Apply(Pass(SystemJob()));
  nodes_[0].status = "down";
  nodes_[1].scheduling_eligibility = "ineligible";
  PlanResult plan = Pass(SystemJob());
  EXPECT_EQ(plan.lost, 1);
  EXPECT_EQ(plan.stopped, 1);
  EXPECT_EQ(plan.placed, 0);
  for (const auto& a : plan.upserts) {
    EXPECT_EQ(a.desired_status, "stop");
    EXPECT_EQ(a.client_status, a.node_id == "n1" ? "lost" : "pending");
  }
  Apply(plan);
  EXPECT_EQ(RunningOn(), (std::set<std::string>{"n3"}));
}

TEST_F(SystemSchedulerTest, ANodeWithoutRoomIsAFailedPlacementAndAConstraintIsNot) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("small", 100, 100), test::MakeNode("n3")};
  nodes_[2].attributes["kernel.name"] = "windows";
  model::Job job = SystemJob();
  job.constraints.push_back({.ltarget = "${attr.kernel.name}", .rtarget = "linux", .operand = "="});
  PlanResult plan = Pass(job);
  EXPECT_EQ(plan.placed, 1);
  ASSERT_EQ(plan.failed_tg_allocs.count("web"), 1u);
  EXPECT_EQ(plan.failed_tg_allocs.at("web").nodes_exhausted, 1);
  EXPECT_EQ(plan.queued.at("web"), 1);
  // A plan counts the placement that fits and the one without room, not the node the
  // constraint filters out.
  EXPECT_EQ(plan.desired_tg_updates.at("web"), (model::DesiredUpdates{.place = 2}));
}

TEST_F(SystemSchedulerTest, AnUpdateCountsInPlaceDestructiveAndNodesItNoLongerFits) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = SystemJob();
  Apply(Pass(job));
  EXPECT_EQ(Pass(job).desired_tg_updates.at("web"), (model::DesiredUpdates{.ignore = 2}));

  model::Job newer = job;
  newer.version = 1;
  newer.task_groups[0].reschedule_policy = model::ReschedulePolicy{.attempts = 1};
  EXPECT_EQ(Pass(newer).desired_tg_updates.at("web"),
            (model::DesiredUpdates{.in_place_update = 2}));

  // A task change replaces both; where the new version no longer fits, it is a stop.
  newer.task_groups[0].tasks[0].env["X"] = "1";
  newer.task_groups[0].constraints.push_back(
      {.ltarget = "${node.unique.id}", .rtarget = "n1", .operand = "="});
  EXPECT_EQ(Pass(newer).desired_tg_updates.at("web"),
            (model::DesiredUpdates{.stop = 1, .destructive_update = 1}));
}

// A group's update block rolls a destructive change out max_parallel allocations per
// stagger: the rest keep running the old version, a follow-up evaluation is due when
// the next batch is, and an evaluation that comes earlier replaces nothing.
TEST_F(SystemSchedulerTest, ARollingUpdateReplacesMaxParallelPerStagger) {
  using namespace std::chrono_literals;  // NOLINT
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2"), test::MakeNode("n3")};
  now_ = common::FromUnixNanos(1'700'000'000'000'000'000);
  Apply(Pass(SystemJob()));
  model::Job v1 = SystemJob();
  v1.version = 1;
  v1.task_groups[0].tasks[0].env["X"] = "1";
  v1.task_groups[0].update = model::UpdateStrategy{.stagger = 30s, .max_parallel = 2};

  PlanResult first = Pass(v1);
  EXPECT_EQ(first.stopped, 2);
  EXPECT_EQ(first.placed, 2);
  // A plan shows every destructive update, as Nomad's does, not only this batch.
  EXPECT_EQ(first.desired_tg_updates.at("web"), (model::DesiredUpdates{.destructive_update = 3}));
  ASSERT_EQ(first.followup_evals.size(), 1u);
  EXPECT_EQ(first.followup_evals[0].triggered_by, "rolling-update");
  EXPECT_EQ(first.followup_evals[0].wait_until, now_ + 30s);
  EXPECT_EQ(first.followup_evals[0].previous_eval, "eval-1");
  Apply(first);

  now_ += 10s;  // say, a node update: too early for the next batch
  PlanResult early = Pass(v1);
  EXPECT_TRUE(early.upserts.empty());
  ASSERT_EQ(early.followup_evals.size(), 1u);
  EXPECT_EQ(early.followup_evals[0].wait_until, now_ + 20s);

  now_ += 20s;
  PlanResult second = Pass(v1);
  EXPECT_EQ(second.stopped, 1);
  EXPECT_EQ(second.placed, 1);
  EXPECT_TRUE(second.followup_evals.empty());
  Apply(second);
  EXPECT_EQ(RunningOn(), (std::set<std::string>{"n1", "n2", "n3"}));
  for (const auto& a : allocs_) {
    if (a.desired_status == "run") {
      EXPECT_EQ(a.job->version, 1u);
    }
  }
  EXPECT_TRUE(Pass(v1).upserts.empty());

  // In-place updates are not held back.
  model::Job v2 = v1;
  v2.version = 2;
  v2.task_groups[0].reschedule_policy = model::ReschedulePolicy{.attempts = 1};
  PlanResult in_place = Pass(v2);
  EXPECT_EQ(in_place.updated_in_place, 3);
  EXPECT_TRUE(in_place.followup_evals.empty());
}

// A new version that does not fit a node even with the old allocation gone leaves the
// old one running there: a failed placement, not a node without the job.
TEST_F(SystemSchedulerTest, AReplacementWithoutRoomKeepsTheOldVersionRunning) {
  nodes_ = {test::MakeNode("n1", 4000, 1000)};
  Apply(Pass(SystemJob()));
  model::Job v1 = SystemJob();
  v1.version = 1;
  v1.task_groups[0].tasks[0].resources.memory_mb = 2000;
  PlanResult plan = Pass(v1);
  EXPECT_EQ(plan.placed, 0);
  EXPECT_EQ(plan.stopped, 0);
  EXPECT_TRUE(plan.upserts.empty());
  EXPECT_EQ(plan.failed_tg_allocs.count("web"), 1u);
}

TEST_F(SystemSchedulerTest, CompletedSysbatchWorkIsNotRunAgain) {
  nodes_ = {test::MakeNode("n1")};
  Apply(Pass(SystemJob("sysbatch")));
  ASSERT_EQ(allocs_.size(), 1u);
  allocs_[0].client_status = "complete";
  EXPECT_TRUE(Pass(SystemJob("sysbatch")).upserts.empty());
  // A new version runs again.
  model::Job v2 = SystemJob("sysbatch");
  v2.version = 1;
  v2.task_groups[0].tasks[0].env["X"] = "1";
  PlanResult plan = Pass(v2);
  EXPECT_EQ(plan.placed, 1);
}

}  // namespace
}  // namespace drover::server
