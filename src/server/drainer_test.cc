// Node drains through the server: UpdateNodeDrain, the drain loop and PlanDrain's
// rules, with a fake clock and client updates made by hand.
#include <gtest/gtest.h>

#include "server/server.h"
#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

class DrainTest : public ::testing::Test {
 protected:
  DrainTest() { server_.Start(); }
  ~DrainTest() override {
    server_.Stop();
    io_.restart();
    io_.poll();
    pool_.join();
  }
  static ServerConfig Config() {
    ServerConfig c;
    c.min_heartbeat_ttl = hours(1000);  // the fake clock jumps; no node goes down
    return c;
  }
  bool Run(const std::function<bool()>& pred) { return testing::RunUntil(io_, pred); }
  // No evaluation waits or runs (one taken by the worker is no longer queued, but
  // still pending until its plan is applied).
  bool Idle() {
    return Run([&] {
      for (const EvalPtr& e : server_.state().ListEvals("*", "")) {
        if (e->status == model::kEvalPending && e->wait_until <= clock_.Now())
          return false;
      }
      return true;
    });
  }

  absl::StatusOr<EvalResponse> Drain(const std::string& node, std::optional<DrainSpec> spec,
                                     bool mark_eligible = false) {
    std::optional<absl::StatusOr<EvalResponse>> out;
    auto call = [&]() -> asio::awaitable<void> {
      std::map<std::string, std::string> meta{{"message", "maintenance"}};
      auto r = co_await server_.UpdateNodeDrainDurably(node, spec, mark_eligible, meta);
      out = std::move(r);
    };
    asio::co_spawn(io_, call, asio::detached);
    EXPECT_TRUE(Run([&] { return out.has_value(); }));
    return out.value_or(absl::DeadlineExceededError("no answer"));
  }

  // The node's allocations still meant to run.
  std::vector<AllocPtr> Live(const std::string& node) {
    std::vector<AllocPtr> out;
    for (const AllocPtr& a : server_.state().AllocsByNode(node)) {
      if (a->desired_status == model::kDesiredRun && !a->ClientTerminal())
        out.push_back(a);
    }
    return out;
  }
  // What a client reports: every live allocation on `node` running, and healthy.
  void ReportRunning(const std::string& node, bool healthy = true) {
    std::vector<model::AllocClientUpdate> updates;
    for (const AllocPtr& a : Live(node)) {
      model::AllocClientUpdate u{.id = a->id, .node_id = node, .client_status = "running"};
      if (healthy)
        u.deployment_status = model::AllocDeploymentStatus{.healthy = true};
      updates.push_back(u);
    }
    ASSERT_TRUE(server_.UpdateAllocsFromClient(node, updates).ok());
  }
  // And stopped allocations reported as done.
  void ReportStopped(const std::string& node) {
    std::vector<model::AllocClientUpdate> updates;
    for (const AllocPtr& a : server_.state().AllocsByNode(node)) {
      if (a->desired_status == model::kDesiredStop && !a->ClientTerminal())
        updates.push_back({.id = a->id, .node_id = node, .client_status = "complete"});
    }
    ASSERT_TRUE(server_.UpdateAllocsFromClient(node, updates).ok());
  }
  void Register(const model::Job& job) {
    auto r = server_.RegisterJob(job);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(Idle());
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  Server server_{io_.get_executor(), pool_, clock_, Config()};
};

TEST_F(DrainTest, ServiceAllocationsMoveNoFasterThanMaxParallel) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  model::Job job = test::MakeJob("web", 3);
  job.task_groups[0].migrate = model::MigrateStrategy{1, "task_states", seconds(1), seconds(60)};
  Register(job);
  ASSERT_EQ(Live("n1").size(), 3u);
  ReportRunning("n1");
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  ASSERT_TRUE(Idle());

  auto resp = Drain("n1", DrainSpec{});
  ASSERT_TRUE(resp.ok()) << resp.status();
  NodePtr n1 = server_.state().GetNode("n1");
  EXPECT_TRUE(n1->drain);
  ASSERT_TRUE(n1->drain_strategy.has_value());
  EXPECT_EQ(n1->scheduling_eligibility, "ineligible");
  EXPECT_EQ(n1->last_drain->status, "draining");
  EXPECT_EQ(n1->last_drain->meta.at("message"), "maintenance");

  for (size_t moved = 1; moved <= 3; ++moved) {
    // One moves; the next waits until its replacement is healthy.
    ASSERT_TRUE(Run([&] { return Live("n2").size() == moved; })) << moved;
    ASSERT_TRUE(Idle());
    EXPECT_EQ(Live("n1").size(), 3 - moved);
    ReportRunning("n2", /*healthy=*/false);
    ASSERT_TRUE(Idle());
    EXPECT_EQ(Live("n2").size(), moved);
    ReportStopped("n1");
    ReportRunning("n2");
  }
  ASSERT_TRUE(Run([&] { return !server_.state().GetNode("n1")->drain; }));
  n1 = server_.state().GetNode("n1");
  EXPECT_FALSE(n1->drain_strategy.has_value());
  EXPECT_EQ(n1->scheduling_eligibility, "ineligible");
  EXPECT_EQ(n1->last_drain->status, "complete");
  for (const AllocPtr& a : server_.state().AllocsByNode("n1")) {
    EXPECT_EQ(a->desired_status, "stop");
    EXPECT_EQ(a->desired_description, "alloc is being migrated");
  }
}

TEST_F(DrainTest, BatchAllocationsAreLeftToFinishUntilTheDeadline) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  Register(test::MakeJob("report", 1, "batch"));
  ReportRunning("n1", false);
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  ASSERT_TRUE(Drain("n1", DrainSpec{.deadline = hours(1)}).ok());
  ASSERT_TRUE(Idle());
  EXPECT_EQ(Live("n1").size(), 1u);
  EXPECT_TRUE(server_.state().GetNode("n1")->drain);
  const common::Time start = clock_.Now();
  // At the deadline it moves, and the drain completes once it has stopped.
  ASSERT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] { return Live("n2").size() == 1; }));
  EXPECT_GE(clock_.Now() - start, hours(1));
  ASSERT_TRUE(Idle());
  EXPECT_TRUE(Live("n1").empty());
  ASSERT_TRUE(Run([&] { return !server_.state().GetNode("n1")->drain; }));
}

TEST_F(DrainTest, SystemAllocationsGoLastOrStayWhenIgnored) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  Register(test::MakeJob("agent", 1, "system"));
  Register(test::MakeJob("report", 1, "batch"));
  ReportRunning("n1", false);
  ReportRunning("n2", false);
  const std::string batch_node = server_.state().AllocsByJob("default", "report")[0]->node_id;
  const std::string other = batch_node == "n1" ? "n2" : "n1";

  // The system allocation stays while the batch one runs, then goes.
  ASSERT_TRUE(Drain(batch_node, DrainSpec{}).ok());
  ASSERT_TRUE(Idle());
  ASSERT_EQ(Live(batch_node).size(), 2u);
  ASSERT_TRUE(server_
                  .UpdateAllocsFromClient(
                      batch_node, {{.id = server_.state().AllocsByJob("default", "report")[0]->id,
                                    .node_id = batch_node,
                                    .client_status = "complete"}})
                  .ok());
  ASSERT_TRUE(Run([&] { return Live(batch_node).empty(); }));
  ASSERT_TRUE(Run([&] { return !server_.state().GetNode(batch_node)->drain; }));

  // Ignored: the drain completes at once and the system allocation keeps running, also
  // after the drain, while the node stays ineligible.
  ASSERT_TRUE(Drain(other, DrainSpec{.ignore_system_jobs = true}).ok());
  ASSERT_TRUE(Run([&] { return !server_.state().GetNode(other)->drain; }));
  EXPECT_TRUE(server_.state().GetNode(other)->last_drain->ignore_system_jobs);
  Register(test::MakeJob("agent", 1, "system"));  // re-evaluated: still kept
  EXPECT_EQ(Live(other).size(), 1u);
}

TEST_F(DrainTest, DisablingADrainCancelsItAndCanMarkTheNodeEligible) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  Register(test::MakeJob("report", 1, "batch"));
  ASSERT_TRUE(Drain("n1", DrainSpec{.deadline = hours(1)}).ok());
  auto resp = Drain("n1", std::nullopt, /*mark_eligible=*/true);
  ASSERT_TRUE(resp.ok()) << resp.status();
  NodePtr n1 = server_.state().GetNode("n1");
  EXPECT_FALSE(n1->drain);
  EXPECT_FALSE(n1->drain_strategy.has_value());
  EXPECT_EQ(n1->scheduling_eligibility, "eligible");
  EXPECT_EQ(n1->last_drain->status, "canceled");
  EXPECT_EQ(resp->index, n1->modify_index);
  EXPECT_EQ(Live("n1").size(), 1u);
}

TEST_F(DrainTest, ADrainOfAnUnknownNodeChangesNothing) {
  const uint64_t before = server_.state().LatestIndex();
  auto resp = Drain("nope", DrainSpec{});
  EXPECT_TRUE(absl::IsNotFound(resp.status())) << resp.status();
  EXPECT_EQ(resp.status().message(), "node not found");
  EXPECT_EQ(server_.state().LatestIndex(), before);
}

// An allocation marked for migration whose evaluation never stopped it (lost in a
// crash) gets another evaluation, and the drain goes on.
TEST_F(DrainTest, AMarkedAllocationWithoutAnEvaluationIsEvaluatedAgain) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  Register(test::MakeJob("report", 1, "batch"));
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  ASSERT_TRUE(Drain("n1", DrainSpec{}).ok());
  ASSERT_TRUE(Idle());
  model::Allocation marked = *Live("n1").at(0);
  marked.desired_transition.migrate = true;
  server_.state().UpsertAllocs({marked});
  ASSERT_TRUE(Run([&] { return Live("n2").size() == 1; }));
  EXPECT_TRUE(Live("n1").empty());
}

// What a client says of its drain is not taken: drains are set through the API.
TEST_F(DrainTest, ANodeCannotRegisterItselfDraining) {
  model::Node node = test::MakeNode("n1");
  node.drain = true;
  node.drain_strategy = model::DrainStrategy{.deadline = seconds(-1)};
  node.last_drain = model::DrainMetadata{.status = "draining"};
  node.scheduling_eligibility = "ineligible";
  ASSERT_TRUE(server_.RegisterNode(node).ok());
  NodePtr stored = server_.state().GetNode("n1");
  EXPECT_FALSE(stored->drain);
  EXPECT_FALSE(stored->drain_strategy.has_value());
  EXPECT_FALSE(stored->last_drain.has_value());
  EXPECT_EQ(stored->scheduling_eligibility, "eligible");
}

// A deadline of centuries does not overflow into one in the past.
TEST_F(DrainTest, AHugeDeadlineIsNotAForcedDrain) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  Register(test::MakeJob("report", 1, "batch"));
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  ASSERT_TRUE(Drain("n1", DrainSpec{.deadline = common::Duration::max()}).ok());
  ASSERT_TRUE(Idle());
  EXPECT_EQ(Live("n1").size(), 1u);
  EXPECT_EQ(server_.state().GetNode("n1")->drain_strategy->force_deadline, common::Time::max());
}

TEST_F(DrainTest, ANegativeDeadlineMovesEverythingAtOnce) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  model::Job job = test::MakeJob("web", 3);
  job.task_groups[0].migrate = model::MigrateStrategy{1, "task_states", seconds(1), seconds(60)};
  Register(job);
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  ASSERT_TRUE(Drain("n1", DrainSpec{.deadline = seconds(-1)}).ok());
  ASSERT_TRUE(Run([&] { return Live("n2").size() == 3; }));
  EXPECT_TRUE(Live("n1").empty());
}

}  // namespace
}  // namespace drover::server
