#include <set>

#include <gtest/gtest.h>

#include "server/scheduler.h"
#include "server/test_fixtures.h"

namespace drover::server {
namespace {

class SystemSchedulerTest : public ::testing::Test {
 protected:
  PlanResult Run(const model::Job& job) {
    SchedulerInput in;
    in.eval.id = "eval-1";
    in.job = std::make_shared<const model::Job>(job);
    for (const auto& n : nodes_)
      in.nodes.push_back(std::make_shared<const model::Node>(n));
    for (const auto& a : allocs_) {
      auto p = std::make_shared<const model::Allocation>(a);
      in.node_allocs.push_back(p);
      if (a.job_id == job.id)
        in.job_allocs.push_back(p);
    }
    in.seed = 7;
    return Schedule(in);
  }
  void Apply(const PlanResult& plan) {
    for (const auto& a : plan.upserts) {
      auto it = std::find_if(allocs_.begin(), allocs_.end(),
                             [&](const model::Allocation& e) { return e.id == a.id; });
      if (it == allocs_.end()) {
        allocs_.push_back(a);
      } else {
        *it = a;
      }
    }
  }
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

  std::vector<model::Node> nodes_;
  std::vector<model::Allocation> allocs_;
};

TEST_F(SystemSchedulerTest, OneAllocationOnEveryNodeThatServesTheJob) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2"), test::MakeNode("n3")};
  nodes_[2].datacenter = "dc9";  // not the job's
  PlanResult plan = Run(SystemJob());
  EXPECT_EQ(plan.placed, 2);
  EXPECT_TRUE(plan.failed_tg_allocs.empty());
  Apply(plan);
  EXPECT_EQ(RunningOn(), (std::set<std::string>{"n1", "n2"}));
  for (const auto& a : allocs_)
    EXPECT_EQ(a.name, "sys.web[0]");
  EXPECT_EQ(Run(SystemJob()).upserts.size(), 0u);  // a second pass changes nothing

  // A node that joins later gets one too.
  nodes_.push_back(test::MakeNode("n4"));
  PlanResult joined = Run(SystemJob());
  ASSERT_EQ(joined.placed, 1);
  EXPECT_EQ(joined.upserts[0].node_id, "n4");
  Apply(joined);
  EXPECT_EQ(RunningOn(), (std::set<std::string>{"n1", "n2", "n4"}));
}

TEST_F(SystemSchedulerTest, ANodeThatLeavesOrTurnsIneligibleLosesItsAllocation) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2"), test::MakeNode("n3")};
  Apply(Run(SystemJob()));
  nodes_[0].status = "down";
  nodes_[1].scheduling_eligibility = "ineligible";
  PlanResult plan = Run(SystemJob());
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
  PlanResult plan = Run(job);
  EXPECT_EQ(plan.placed, 1);
  ASSERT_EQ(plan.failed_tg_allocs.count("web"), 1u);
  EXPECT_EQ(plan.failed_tg_allocs.at("web").nodes_exhausted, 1);
  EXPECT_EQ(plan.queued.at("web"), 1);
}

TEST_F(SystemSchedulerTest, CompletedSysbatchWorkIsNotRunAgain) {
  nodes_ = {test::MakeNode("n1")};
  Apply(Run(SystemJob("sysbatch")));
  ASSERT_EQ(allocs_.size(), 1u);
  allocs_[0].client_status = "complete";
  EXPECT_TRUE(Run(SystemJob("sysbatch")).upserts.empty());
  // A new version runs again.
  model::Job v2 = SystemJob("sysbatch");
  v2.version = 1;
  v2.task_groups[0].tasks[0].env["X"] = "1";
  PlanResult plan = Run(v2);
  EXPECT_EQ(plan.placed, 1);
}

}  // namespace
}  // namespace drover::server
