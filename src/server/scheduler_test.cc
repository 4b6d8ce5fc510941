#include "server/scheduler.h"

#include <set>

#include <gtest/gtest.h>

#include "server/test_fixtures.h"

namespace drover::server {
namespace {

class SchedulerTest : public ::testing::Test, protected test::SchedulerHarness {};

TEST_F(SchedulerTest, PlacesCountAllocsWithNamesAndResources) {
  nodes_ = {test::MakeNode("n1")};
  auto plan = Pass(test::MakeJob("web", 3));
  ASSERT_EQ(plan.placed, 3);
  std::set<std::string> names;
  for (const auto& a : plan.upserts) {
    names.insert(a.name);
    EXPECT_EQ(a.node_id, "n1");
    EXPECT_EQ(a.desired_status, "run");
    EXPECT_EQ(a.client_status, "pending");
    EXPECT_EQ(a.allocated_resources.tasks.at("server").cpu_shares, 500);
    EXPECT_EQ(a.allocated_resources.shared.disk_mb, 300);
  }
  EXPECT_EQ(names, (std::set<std::string>{"web.web[0]", "web.web[1]", "web.web[2]"}));
  EXPECT_TRUE(plan.failed_tg_allocs.empty());
  EXPECT_EQ(plan.queued.at("web"), 0);
}

// Allocations on a node that is down are lost and replaced elsewhere; batch work that
// already completed there stays complete.
TEST_F(SchedulerTest, AllocationsOnADownNodeAreLostAndReplaced) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = test::MakeJob("web", 2);
  job.constraints.push_back({.rtarget = "true", .operand = "distinct_hosts"});
  Apply(Pass(job));
  ASSERT_EQ(allocs_.size(), 2u);
  nodes_[0].status = model::kNodeStatusDown;
  auto plan = Pass(job);
  EXPECT_EQ(plan.lost, 1);
  EXPECT_EQ(plan.placed, 0);  // distinct_hosts: nowhere else to go
  ASSERT_EQ(plan.upserts.size(), 1u);
  EXPECT_EQ(plan.upserts[0].node_id, "n1");
  EXPECT_EQ(plan.upserts[0].client_status, "lost");
  EXPECT_EQ(plan.upserts[0].desired_status, "stop");
  EXPECT_EQ(plan.queued.at("web"), 1);

  // Without distinct_hosts the replacement lands on the node that is up, and names
  // the allocation it replaces.
  allocs_.clear();
  nodes_[0].status = model::kNodeStatusReady;
  model::Job spread = test::MakeJob("web", 2);
  Apply(Pass(spread));
  for (auto& a : allocs_)
    a.node_id = "n1";
  nodes_[0].status = model::kNodeStatusDown;
  auto again = Pass(spread);
  EXPECT_EQ(again.lost, 2);
  EXPECT_EQ(again.placed, 2);
  for (const auto& a : again.upserts) {
    if (a.client_status == "lost")
      continue;
    EXPECT_EQ(a.node_id, "n2");
    EXPECT_FALSE(a.previous_allocation.empty());
  }
}

// max_client_disconnect: the allocations of a disconnected node are unknown within the
// window and replaced elsewhere once; lost after it; kept if the node comes back and
// reports them, and then their replacements stop.
TEST_F(SchedulerTest, ADisconnectedNodesAllocationsAreUnknownThenLostOrKept) {
  using namespace std::chrono_literals;  // NOLINT
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  nodes_[1].scheduling_eligibility = "ineligible";
  model::Job job = test::MakeJob("web", 1);
  job.task_groups[0].max_client_disconnect = 10min;
  const common::Time since = common::FromUnixNanos(1'700'000'000'000'000'000);
  now_ = since;
  Apply(Pass(job));
  ASSERT_EQ(allocs_.size(), 1u);
  ASSERT_EQ(allocs_[0].node_id, "n1");
  allocs_[0].client_status = model::kClientRunning;
  const std::string original = allocs_[0].id;
  nodes_[1].scheduling_eligibility = "eligible";
  nodes_[0].status = model::kNodeStatusDisconnected;
  nodes_[0].status_updated_at = 1'700'000'000;
  now_ = since + 1min;
  PlanResult plan = Pass(job);
  EXPECT_EQ(plan.unknown, 1);
  EXPECT_EQ(plan.lost, 0);
  ASSERT_EQ(plan.placed, 1);
  for (const model::Allocation& a : plan.upserts) {
    if (a.id == original) {
      EXPECT_EQ(a.client_status, model::kClientUnknown);
      EXPECT_EQ(a.desired_status, model::kDesiredRun);
    } else {
      EXPECT_EQ(a.node_id, "n2");
      EXPECT_EQ(a.previous_allocation, original);
    }
  }
  ASSERT_EQ(plan.followup_evals.size(), 1u);
  EXPECT_EQ(plan.followup_evals[0].wait_until, since + 10min);
  EXPECT_EQ(plan.followup_evals[0].triggered_by, model::kTriggerMaxDisconnectTimeout);
  Apply(plan);
  PlanResult again = Pass(job);
  EXPECT_TRUE(again.upserts.empty());
  EXPECT_TRUE(again.followup_evals.empty());

  // The window passes: lost, and not replaced a second time.
  now_ = since + 11min;
  PlanResult expired = Pass(job);
  EXPECT_EQ(expired.lost, 1);
  EXPECT_EQ(expired.placed, 0);

  // Instead the node comes back. Until it reports the allocation, nothing changes; then
  // the original keeps its slot and the replacement stops.
  now_ = since + 2min;
  nodes_[0].status = model::kNodeStatusReady;
  EXPECT_TRUE(Pass(job).upserts.empty());
  for (model::Allocation& a : allocs_) {
    if (a.id == original)
      a.client_status = model::kClientRunning;
  }
  PlanResult back = Pass(job);
  EXPECT_EQ(back.placed, 0);
  ASSERT_EQ(back.stopped, 1);
  ASSERT_EQ(back.upserts.size(), 1u);
  EXPECT_NE(back.upserts[0].id, original);
  EXPECT_EQ(back.upserts[0].desired_description, kAllocReconnected);

  // Had it failed while away, the replacement keeps the slot and nothing else is placed
  // (its reschedule policy does not add a second replacement).
  for (model::Allocation& a : allocs_) {
    if (a.id == original)
      a.client_status = model::kClientFailed;
  }
  PlanResult failed = Pass(job);
  EXPECT_EQ(failed.placed, 0);
  EXPECT_EQ(failed.stopped, 0);
  EXPECT_TRUE(failed.followup_evals.empty());
}

TEST_F(SchedulerTest, WithoutMaxClientDisconnectADisconnectedNodesAllocationsAreLost) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = test::MakeJob("web", 1);
  Apply(Pass(job));
  for (model::Node& n : nodes_) {
    if (n.id == allocs_[0].node_id)
      n.status = model::kNodeStatusDisconnected;
  }
  PlanResult plan = Pass(job);
  EXPECT_EQ(plan.lost, 1);
  EXPECT_EQ(plan.unknown, 0);
  EXPECT_EQ(plan.placed, 1);
}

TEST_F(SchedulerTest, CompletedBatchWorkOnADownNodeStaysComplete) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = test::MakeJob("bat", 1, "batch");
  Apply(Pass(job));
  ASSERT_EQ(allocs_.size(), 1u);
  allocs_[0].client_status = "complete";
  for (auto& n : nodes_) {
    if (n.id == allocs_[0].node_id)
      n.status = model::kNodeStatusDown;
  }
  auto plan = Pass(job);
  EXPECT_EQ(plan.lost, 0);
  EXPECT_EQ(plan.placed, 0);
  EXPECT_TRUE(plan.upserts.empty());
}

// A failed service allocation is replaced once its reschedule delay has passed,
// preferably on another node, and the two point at each other; before that, a
// follow-up evaluation waits for the time.
TEST_F(SchedulerTest, AFailedAllocationIsRescheduledByItsPolicy) {
  using namespace std::chrono_literals;  // NOLINT
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = test::MakeJob("web", 1);
  job.task_groups[0].reschedule_policy = model::ReschedulePolicy{
      .delay = 30s, .delay_function = "exponential", .max_delay = 1h, .unlimited = true};
  Apply(Pass(job));
  ASSERT_EQ(allocs_.size(), 1u);
  const common::Time failed_at = common::Time(1'000'000s);
  allocs_[0].client_status = "failed";
  allocs_[0].task_states["server"].finished_at = failed_at;
  const std::string failed_node = allocs_[0].node_id;

  now_ = failed_at + 10s;
  PlanResult early = Pass(job);
  EXPECT_EQ(early.placed, 0);
  ASSERT_EQ(early.followup_evals.size(), 1u);
  EXPECT_EQ(early.followup_evals[0].wait_until, failed_at + 30s);
  EXPECT_EQ(early.followup_evals[0].triggered_by, "alloc-failure");
  ASSERT_EQ(early.upserts.size(), 1u);
  EXPECT_EQ(early.upserts[0].followup_eval_id, early.followup_evals[0].id);
  Apply(early);
  EXPECT_TRUE(Pass(job).followup_evals.empty());  // one follow-up at a time

  now_ = failed_at + 30s;
  PlanResult due = Pass(job);
  ASSERT_EQ(due.placed, 1);
  const model::Allocation* replacement = nullptr;
  const model::Allocation* old = nullptr;
  for (const auto& a : due.upserts)
    (a.id == allocs_[0].id ? old : replacement) = &a;
  ASSERT_NE(replacement, nullptr);
  ASSERT_NE(old, nullptr);
  EXPECT_NE(replacement->node_id, failed_node);
  EXPECT_EQ(replacement->previous_allocation, allocs_[0].id);
  EXPECT_EQ(old->next_allocation, replacement->id);
  ASSERT_TRUE(replacement->reschedule_tracker.has_value());
  ASSERT_EQ(replacement->reschedule_tracker->events.size(), 1u);
  EXPECT_EQ(replacement->reschedule_tracker->events[0].delay, 30s);
  EXPECT_EQ(replacement->reschedule_tracker->events[0].prev_node_id, failed_node);
  Apply(due);
  EXPECT_EQ(Pass(job).placed, 0);  // the replaced allocation holds no slot any more
}

// The follow-up evaluation a failed allocation names replaces it when it runs, even if
// the failure time moved meanwhile (no task finished: the allocation's modify time,
// which marking it with the follow-up changed).
TEST_F(SchedulerTest, AFailedAllocationsOwnFollowUpReplacesIt) {
  using namespace std::chrono_literals;  // NOLINT
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = test::MakeJob("web", 1);
  job.task_groups[0].reschedule_policy =
      model::ReschedulePolicy{.delay = 30s, .delay_function = "constant", .unlimited = true};
  Apply(Pass(job));
  now_ = common::Time(1'000'000s);
  allocs_[0].client_status = "failed";
  allocs_[0].modify_time = common::ToUnixNanos(now_);
  PlanResult first = Pass(job);
  ASSERT_EQ(first.followup_evals.size(), 1u);
  Apply(first);
  allocs_[0].modify_time = common::ToUnixNanos(now_ + 10s);  // the marking moved it
  now_ += 30s;
  eval_id_ = first.followup_evals[0].id;
  PlanResult due = Pass(job);
  EXPECT_EQ(due.placed, 1);
  EXPECT_TRUE(due.followup_evals.empty());
}

TEST_F(SchedulerTest, SecondPassIsANoOp) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("web", 2);
  Apply(Pass(job));
  auto plan = Pass(job);
  EXPECT_EQ(plan.placed, 0);
  EXPECT_TRUE(plan.upserts.empty());
}

TEST_F(SchedulerTest, ConstraintThatNoNodeMeetsFailsWithMetric) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  model::Job job = test::MakeJob("web", 2);
  job.constraints.push_back({"${attr.kernel.name}", "windows", "="});
  auto plan = Pass(job);
  EXPECT_EQ(plan.placed, 0);
  const auto& m = plan.failed_tg_allocs.at("web");
  EXPECT_EQ(m.nodes_evaluated, 2);
  EXPECT_EQ(m.nodes_filtered, 2);
  EXPECT_EQ(m.constraint_filtered.at("${attr.kernel.name} = windows"), 2);
  EXPECT_EQ(m.coalesced_failures, 1);
  EXPECT_EQ(plan.queued.at("web"), 2);
}

// Each placement scores a few fitting nodes, not all of them: log2 of the cluster for
// a service job, 2 for a batch job; infeasible nodes are passed over without counting.
// Consecutive placements walk on to other nodes.
TEST_F(SchedulerTest, APlacementScoresOnlyAFewNodes) {
  for (int i = 0; i < 1000; ++i) {
    nodes_.push_back(test::MakeNode("n" + std::to_string(i)));
    if (i % 2 == 1)
      nodes_.back().attributes["kernel.name"] = "windows";
  }
  model::Job job = test::MakeJob("web", 20);
  job.constraints.push_back({"${attr.kernel.name}", "linux", "="});
  auto plan = Pass(job);
  ASSERT_EQ(plan.placed, 20);
  for (const auto& a : plan.upserts) {
    EXPECT_EQ(a.metrics.nodes_available, 1000);
    // 10 = ceil(log2(1000)) fitting nodes, each found past about one filtered one.
    EXPECT_LT(a.metrics.nodes_evaluated, 40) << a.metrics.nodes_evaluated;
    EXPECT_GE(a.metrics.nodes_evaluated, 10);
  }
  model::Job batch = test::MakeJob("report", 1, "batch");
  auto b = Pass(batch);
  ASSERT_EQ(b.placed, 1);
  EXPECT_LT(b.upserts[0].metrics.nodes_evaluated, 20);

  // The naive baseline scores every node.
  allocs_.clear();
  naive_ = true;
  auto all = Pass(test::MakeJob("web", 1));
  EXPECT_EQ(all.upserts[0].metrics.nodes_evaluated, 1000);
}

TEST_F(SchedulerTest, UnknownDriverIsFilteredAsMissingDrivers) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("web");
  job.task_groups[0].tasks[0].driver = "docker";
  auto plan = Pass(job);
  EXPECT_EQ(plan.failed_tg_allocs.at("web").constraint_filtered.at("missing drivers"), 1);
}

TEST_F(SchedulerTest, MemoryExhaustionAndBinPacking) {
  nodes_ = {test::MakeNode("small", 4000, 1024), test::MakeNode("big", 4000, 8192)};
  model::Job job = test::MakeJob("web", 1);
  job.task_groups[0].tasks[0].resources.memory_mb = 900;
  // Bin-packing prefers the node left fuller: "small".
  auto plan = Pass(job);
  ASSERT_EQ(plan.placed, 1);
  EXPECT_EQ(plan.upserts[0].node_id, "small");
  Apply(plan);
  job.task_groups[0].count = 3;
  job.version = 1;
  plan = Pass(job);
  // small is exhausted; both new allocs land on big.
  int on_big = 0;
  for (const auto& a : plan.upserts)
    on_big += a.node_id == "big" && a.desired_status == "run";
  EXPECT_EQ(plan.placed, 2);
  EXPECT_EQ(on_big, 2);
  job.task_groups[0].count = 20;
  job.version = 2;
  Apply(plan);
  plan = Pass(job);
  const auto& m = plan.failed_tg_allocs.at("web");
  EXPECT_GE(m.dimension_exhausted.at("memory"), 1);
}

TEST_F(SchedulerTest, StaticPortCollisionAndDynamicPorts) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("web", 1);
  model::NetworkResource net;
  net.reserved_ports.push_back({"http", 8080, 0, ""});
  net.dynamic_ports.push_back({"admin", 0, -1, ""});
  job.task_groups[0].networks.push_back(net);
  auto plan = Pass(job);
  ASSERT_EQ(plan.placed, 1);
  const auto& ports = plan.upserts[0].allocated_resources.shared.ports;
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].value, 8080);
  EXPECT_GE(ports[1].value, 20000);
  EXPECT_LE(ports[1].value, 32000);
  Apply(plan);
  model::Job other = test::MakeJob("other", 1);
  other.task_groups[0].networks.push_back(net);
  plan = Pass(other);
  EXPECT_EQ(plan.placed, 0);
  EXPECT_EQ(plan.failed_tg_allocs.at("web").dimension_exhausted.at(
                "network: reserved port collision http=8080"),
            1);
}

TEST_F(SchedulerTest, StopJobStopsAllocsAndScaleDownStopsHighestIndexes) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("web", 3);
  Apply(Pass(job));
  job.task_groups[0].count = 1;
  job.version = 1;
  // Same group spec apart from count: in-place for index 0, stops for 1 and 2.
  auto plan = Pass(job);
  EXPECT_EQ(plan.stopped, 2);
  for (const auto& a : plan.upserts) {
    if (a.desired_status == "stop") {
      EXPECT_NE(a.Index(), 0);
      EXPECT_EQ(a.desired_description, kAllocNotNeeded);
    }
  }
  Apply(plan);
  job.stop = true;
  plan = Pass(job);
  EXPECT_EQ(plan.stopped, 1);
}

TEST_F(SchedulerTest, ChangedTaskIsADestructiveUpdateWithPreviousAllocation) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("web", 1);
  Apply(Pass(job));
  const std::string old_id = allocs_[0].id;
  job.task_groups[0].tasks[0].env["X"] = "1";
  job.version = 1;
  auto plan = Pass(job);
  EXPECT_EQ(plan.stopped, 1);
  EXPECT_EQ(plan.placed, 1);
  for (const auto& a : plan.upserts) {
    if (a.id == old_id) {
      EXPECT_EQ(a.desired_description, kAllocUpdating);
    } else {
      EXPECT_EQ(a.previous_allocation, old_id);
      EXPECT_EQ(a.name, "web.web[0]");
    }
  }
}

// The replacement of an alloc with a sticky ephemeral disk goes back to the node that
// holds the data, even where bin-packing alone would pick another node.
TEST_F(SchedulerTest, StickyDiskReplacementPrefersThePreviousNode) {
  for (const bool sticky : {false, true}) {
    SCOPED_TRACE(sticky ? "sticky" : "not sticky");
    nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
    allocs_.clear();
    model::Job job = test::MakeJob("web", 1);
    if (sticky)
      job.task_groups[0].ephemeral_disk = model::EphemeralDisk{.sticky = true, .size_mb = 300};
    Apply(Pass(job));
    ASSERT_EQ(allocs_.size(), 1u);
    // Move it by hand to the node bin-packing does not choose first.
    const std::string other = allocs_[0].node_id == "n1" ? "n2" : "n1";
    allocs_[0].node_id = other;
    job.task_groups[0].tasks[0].env["X"] = "1";
    job.version = 1;
    auto plan = Pass(job);
    ASSERT_EQ(plan.placed, 1);
    for (const auto& a : plan.upserts) {
      if (a.previous_allocation.empty())
        continue;
      if (sticky) {
        EXPECT_EQ(a.node_id, other);
      } else {
        EXPECT_NE(a.node_id, other);
      }
    }
  }
}

TEST_F(SchedulerTest, CompletedBatchAllocIsNotRerun) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("b", 1, "batch");
  Apply(Pass(job));
  allocs_[0].client_status = "complete";
  auto plan = Pass(job);
  EXPECT_TRUE(plan.upserts.empty());
}

TEST_F(SchedulerTest, DatacenterAndDownNodesAreNotCandidates) {
  nodes_ = {test::MakeNode("n1"), test::MakeNode("n2")};
  nodes_[0].datacenter = "dc2";
  nodes_[1].status = "down";
  auto plan = Pass(test::MakeJob("web"));
  EXPECT_EQ(plan.placed, 0);
  EXPECT_EQ(plan.failed_tg_allocs.at("web").nodes_evaluated, 0);
}

}  // namespace
}  // namespace drover::server

namespace drover::server {
namespace {

TEST_F(SchedulerTest, FinishedAllocsOfAnOlderVersionAreReplacedOnUpdate) {
  nodes_ = {test::MakeNode("n1")};
  model::Job job = test::MakeJob("web", 1);
  Apply(Pass(job));
  allocs_[0].client_status = "failed";
  // Same version: the failed alloc keeps its slot (rescheduling is a separate policy).
  EXPECT_EQ(Pass(job).placed, 0);
  job.task_groups[0].tasks[0].config = model::Value::Object{{"fixed", true}};
  job.version = 1;
  auto plan = Pass(job);
  EXPECT_EQ(plan.placed, 1);
  EXPECT_EQ(plan.stopped, 0);
}

}  // namespace
}  // namespace drover::server
