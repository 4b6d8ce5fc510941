#include "server/server.h"

#include <gtest/gtest.h>

#include "common/derived_token.h"
#include "server/server_fixture.h"
#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using ServerTest = test::ServerFixture;

TEST_F(ServerTest, RegisterCanonicalizesSchedulesAndCompletesEval) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  model::Job job = test::MakeJob("web", 2);
  job.region.clear();
  job.priority = 0;
  auto resp = server_.RegisterJob(job);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_TRUE(EvalDone(resp->eval_id));
  auto eval = server_.state().GetEval(resp->eval_id);
  EXPECT_EQ(eval->status, "complete");
  EXPECT_EQ(eval->triggered_by, "job-register");
  auto stored = server_.state().GetJob("default", "web");
  EXPECT_EQ(stored->region, "global");
  EXPECT_EQ(stored->priority, 50);
  EXPECT_EQ(stored->status, "running");
  EXPECT_EQ(server_.state().AllocsByEval(resp->eval_id).size(), 2u);
}

TEST_F(ServerTest, InvalidJobIsRejectedWithEveryProblem) {
  model::Job job = test::MakeJob("web");
  job.task_groups[0].tasks[0].driver.clear();
  job.task_groups[0].tasks[0].resources.memory_mb = 1;
  auto resp = server_.RegisterJob(job);
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(resp.status()));
  EXPECT_NE(resp.status().message().find("2 errors occurred"), std::string::npos)
      << resp.status().message();
}

TEST_F(ServerTest, UnplaceableJobGetsBlockedEvalThatRetriesWhenANodeJoins) {
  auto resp = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(EvalDone(resp->eval_id));
  auto eval = server_.state().GetEval(resp->eval_id);
  ASSERT_FALSE(eval->blocked_eval.empty());
  EXPECT_EQ(server_.state().GetEval(eval->blocked_eval)->status, "blocked");
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  ASSERT_TRUE(EvalDone(eval->blocked_eval));
  EXPECT_EQ(server_.state().AllocsByJob("default", "web").size(), 1u);
}

TEST_F(ServerTest, NodeDevicesChangingUnblocksAJobWaitingForThem) {
  model::Node node = test::MakeNode("n1");
  model::NodeDeviceResource gpus{.vendor = "nvidia", .type = "gpu", .name = "T4"};
  gpus.instances = {{.id = "GPU-0", .healthy = false, .health_description = "hot"}};
  node.node_resources.devices = {gpus};
  ASSERT_TRUE(server_.RegisterNode(node).ok());
  const std::string cls = server_.state().GetNode("n1")->computed_class;
  EXPECT_EQ(cls, model::ComputeNodeClass(*server_.state().GetNode("n1")));
  model::Job job = test::MakeJob("train");
  job.task_groups[0].tasks[0].resources.devices = {{"nvidia/gpu", 1, {}, {}}};
  auto resp = server_.RegisterJob(job);
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(EvalDone(resp->eval_id));
  auto eval = server_.state().GetEval(resp->eval_id);
  ASSERT_FALSE(eval->blocked_eval.empty());
  // The GPU turns healthy: the node re-registers, its class stays, the job is placed.
  node.node_resources.devices[0].instances[0].healthy = true;
  ASSERT_TRUE(server_.RegisterNode(node).ok());
  EXPECT_EQ(server_.state().GetNode("n1")->computed_class, cls);
  ASSERT_TRUE(EvalDone(eval->blocked_eval));
  auto allocs = server_.state().AllocsByJob("default", "train");
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0]->allocated_resources.tasks.at("server").devices[0].device_ids,
            std::vector<std::string>{"GPU-0"});
}

TEST_F(ServerTest, DeregisterStopsAllocsAndPurgeRemovesJob) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  auto resp = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(EvalDone(resp->eval_id));
  auto stop = server_.DeregisterJob("default", "web", false);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(EvalDone(stop->eval_id));
  EXPECT_TRUE(server_.state().GetJob("default", "web")->stop);
  for (const auto& a : server_.state().AllocsByJob("default", "web")) {
    EXPECT_EQ(a->desired_status, "stop");
  }
  auto purge = server_.DeregisterJob("default", "web", true);
  ASSERT_TRUE(purge.ok());
  EXPECT_EQ(server_.state().GetJob("default", "web"), nullptr);
  EXPECT_TRUE(absl::IsNotFound(server_.DeregisterJob("default", "web", false).status()));
}

TEST_F(ServerTest, StopAllocPlacesAReplacement) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  auto resp = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(EvalDone(resp->eval_id));
  const std::string first = server_.state().AllocsByJob("default", "web")[0]->id;
  auto stop = server_.StopAlloc(first);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(EvalDone(stop->eval_id));
  EXPECT_EQ(server_.state().GetAlloc(first)->desired_status, "stop");
  auto allocs = server_.state().AllocsByJob("default", "web");
  EXPECT_EQ(allocs.size(), 2u);
  EXPECT_TRUE(absl::IsNotFound(server_.StopAlloc("nope").status()));
}

TEST_F(ServerTest, MissedHeartbeatsMarkNodeDown) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return server_.state().GetNode("n1")->status == "down"; }));
  ASSERT_TRUE(server_.Heartbeat("n1").ok());
  EXPECT_EQ(server_.state().GetNode("n1")->status, "ready");
  EXPECT_TRUE(absl::IsNotFound(server_.Heartbeat("nope").status()));
}

// A node that misses its heartbeats loses its allocations to the nodes that keep
// theirs, and what it says when it comes back does not undo that.
TEST_F(ServerTest, ANodeThatGoesDownHasItsAllocationsReplacedElsewhere) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  auto resp = server_.RegisterJob(test::MakeJob("web", 2));
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(EvalDone(resp->eval_id));
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  // n2 heartbeats; n1 does not.
  ASSERT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] {
    (void)server_.Heartbeat("n2");
    return server_.state().GetNode("n1")->status == "down";
  }));
  ASSERT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] {
    (void)server_.Heartbeat("n2");
    return server_.state().AllocsByNode("n2").size() == 2;
  }));
  std::vector<AllocPtr> on_n1 = server_.state().AllocsByNode("n1");
  ASSERT_EQ(on_n1.size(), 2u);
  for (const AllocPtr& a : on_n1) {
    EXPECT_EQ(a->client_status, "lost");
    EXPECT_EQ(a->desired_status, "stop");
  }
  for (const AllocPtr& a : server_.state().AllocsByNode("n2"))
    EXPECT_EQ(a->desired_status, "run");
  bool triggered = false;
  for (const EvalPtr& e : server_.state().EvalsByJob("default", "web"))
    triggered = triggered || e->triggered_by == "node-update";
  EXPECT_TRUE(triggered);
  // n1 is back and reports its (stopped) allocations: they stay lost.
  ASSERT_TRUE(server_.Heartbeat("n1").ok());
  ASSERT_TRUE(server_
                  .UpdateAllocsFromClient(
                      "n1", {{.id = on_n1[0]->id, .node_id = "n1", .client_status = "complete"}})
                  .ok());
  EXPECT_EQ(server_.state().GetAlloc(on_n1[0]->id)->client_status, "lost");
}

}  // namespace
}  // namespace drover::server

namespace drover::server {
namespace {

// What a node learns of the allocation its own one replaces: only for its own, and the
// migrate token only once the previous allocation has stopped and for a replacement that
// is still meant to run.
TEST_F(ServerTest, TheMigrateTokenIsGivenOnlyForAStoppedPreviousAllocation) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2")).ok());
  model::Job job = test::MakeJob("web");
  job.task_groups[0].ephemeral_disk = model::EphemeralDisk{.migrate = true};
  auto jp = std::make_shared<const model::Job>(job);
  model::Allocation prev{
      .id = "prev", .namespace_ = "default", .node_id = "n1", .job_id = "web", .task_group = "web"};
  prev.job = jp;
  prev.desired_status = model::kDesiredStop;
  prev.client_status = model::kClientRunning;
  model::Allocation next = prev;
  next.id = "next";
  next.node_id = "n2";
  next.desired_status = model::kDesiredRun;
  next.client_status = model::kClientPending;
  next.previous_allocation = "prev";
  server_.state().UpsertAllocs({prev, next});
  auto ask = [&](const std::string& node, const std::string& alloc) {
    std::optional<absl::StatusOr<model::PrevAllocInfo>> out;
    asio::co_spawn(
        io_,
        [&]() -> asio::awaitable<void> {
          out = co_await server_.WatchPreviousAlloc(node, alloc, 0, common::Duration(0));
        },
        asio::detached);
    EXPECT_TRUE(testing::RunUntil(io_, [&] { return out.has_value(); }));
    return out.value_or(absl::InternalError("no answer"));
  };
  EXPECT_TRUE(absl::IsPermissionDenied(ask("n1", "next").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(ask("n1", "prev").status()));
  absl::StatusOr<model::PrevAllocInfo> running = ask("n2", "next");
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_FALSE(running->done);
  EXPECT_TRUE(running->migrate_token.empty());
  ASSERT_TRUE(server_
                  .UpdateAllocsFromClient(
                      "n1", {{.id = "prev", .node_id = "n1", .client_status = "complete"}})
                  .ok());
  absl::StatusOr<model::PrevAllocInfo> stopped = ask("n2", "next");
  ASSERT_TRUE(stopped.ok());
  EXPECT_TRUE(stopped->done);
  EXPECT_EQ(stopped->node_id, "n1");
  EXPECT_EQ(stopped->migrate_token, common::MigrateToken("secret-n1", "prev"));
  // A replacement that is no longer meant to run gets no token.
  next.desired_status = model::kDesiredStop;
  server_.state().UpsertAllocs({next});
  EXPECT_TRUE(ask("n2", "next")->migrate_token.empty());
}

// max_client_disconnect on the server: a silent node is disconnected and its allocation
// unknown; a report brings it back (ready, running); silent past the window, it is down
// and the allocation lost.
// Nomad's rate-scaled TTL: with more nodes than min_heartbeat_ttl ×
// max_heartbeats_per_second, the TTL grows so that the servers see no more than that
// rate, plus a stagger of up to the same again.
TEST(HeartbeatTtlTest, GrowsWithTheNodeCountToKeepTheRate) {
  asio::io_context io;
  asio::thread_pool pool{1};
  common::FakeClock clock;
  Server server{
      io.get_executor(), pool, clock,
      ServerConfig{.min_heartbeat_ttl = std::chrono::seconds(10), .max_heartbeats_per_second = 10}};
  common::Duration first{0};
  for (int i = 0; i < 500; ++i) {
    auto ttl = server.RegisterNode(test::MakeNode("n" + std::to_string(i)));
    ASSERT_TRUE(ttl.ok()) << ttl.status();
    if (i == 0)
      first = *ttl;
  }
  EXPECT_GE(first, std::chrono::seconds(10));  // one node: the minimum, staggered
  EXPECT_LT(first, std::chrono::seconds(20));
  common::Duration lowest = std::chrono::hours(1);
  common::Duration highest{0};
  for (int i = 0; i < 100; ++i) {
    const common::Duration ttl = server.NextHeartbeatTtl();
    lowest = std::min(lowest, ttl);
    highest = std::max(highest, ttl);
  }
  // 500 nodes at 10 per second: 50 s, staggered up to 100 s.
  EXPECT_GE(lowest, std::chrono::seconds(50));
  EXPECT_LT(highest, std::chrono::seconds(100));
  EXPECT_GT(highest - lowest, std::chrono::seconds(10));  // spread, not one instant
  pool.join();
}

TEST_F(ServerTest, ASilentNodeIsDisconnectedWithinTheWindowThenDown) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  model::Job job = test::MakeJob("web");
  job.task_groups[0].max_client_disconnect = std::chrono::minutes(30);
  auto resp = server_.RegisterJob(job);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_TRUE(EvalDone(resp->eval_id));
  const std::string id = server_.state().AllocsByNode("n1").at(0)->id;
  const model::AllocClientUpdate running{.id = id, .node_id = "n1", .client_status = "running"};
  ASSERT_TRUE(server_.UpdateAllocsFromClient("n1", {running}).ok());
  ASSERT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] {
    return server_.state().GetNode("n1")->status == "disconnected" &&
           server_.state().GetAlloc(id)->client_status == "unknown";
  }));
  EXPECT_EQ(server_.state().GetAlloc(id)->desired_status, "run");
  ASSERT_TRUE(server_.UpdateAllocsFromClient("n1", {running}).ok());
  EXPECT_EQ(server_.state().GetNode("n1")->status, "ready");
  EXPECT_EQ(server_.state().GetAlloc(id)->client_status, "running");
  const common::Time silent_from = clock_.Now();
  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return server_.state().GetNode("n1")->status == "down"; },
      std::chrono::seconds(30)));
  EXPECT_GE(clock_.Now() - silent_from, std::chrono::minutes(30));
  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return server_.state().GetAlloc(id)->client_status == "lost"; }));
}

TEST_F(ServerTest, DeregisterWithNoShutdownDelayMarksTheStoppedAllocs) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  auto resp = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(EvalDone(resp->eval_id));
  auto stop = server_.DeregisterJob("default", "web", false, /*no_shutdown_delay=*/true);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(EvalDone(stop->eval_id));
  for (const auto& a : server_.state().AllocsByJob("default", "web")) {
    EXPECT_EQ(a->desired_status, "stop");
    EXPECT_TRUE(a->desired_transition.no_shutdown_delay.value_or(false));
  }
}

// A node's long poll wakes for the server's changes to its own allocations: not for
// another node's, nor for its own status reports.
TEST_F(ServerTest, ANodesAllocationWatchWakesForItsOwnChangesOnly) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n2", 1000)).ok());
  model::Job job = test::MakeJob("web", 1);
  job.constraints.push_back({"${node.unique.id}", "n1", "="});
  auto resp = server_.RegisterJob(job);
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(EvalDone(resp->eval_id));
  std::optional<absl::StatusOr<NodeAllocs>> first;
  auto watch = [&](uint64_t index,
                   std::optional<absl::StatusOr<NodeAllocs>>& out) -> asio::awaitable<void> {
    auto r = co_await server_.WatchNodeAllocs("n1", index, std::chrono::minutes(5));
    out = std::move(r);
  };
  asio::co_spawn(io_, watch(0, first), asio::detached);
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return first.has_value(); }));
  ASSERT_TRUE(first->ok());
  ASSERT_EQ((*first)->allocs.size(), 1u);
  const uint64_t index = (*first)->index;

  std::optional<absl::StatusOr<NodeAllocs>> second;
  asio::co_spawn(io_, watch(index, second), asio::detached);
  // Another node's allocation, and n1's own report: no wake-up.
  model::Job other = test::MakeJob("other", 1);
  other.constraints.push_back({"${node.unique.id}", "n2", "="});
  auto r2 = server_.RegisterJob(other);
  ASSERT_TRUE(r2.ok());
  ASSERT_TRUE(EvalDone(r2->eval_id));
  ASSERT_TRUE(
      server_
          .UpdateAllocsFromClient(
              "n1", {{.id = (*first)->allocs[0]->id, .node_id = "n1", .client_status = "running"}})
          .ok());
  io_.poll();
  EXPECT_FALSE(second.has_value());
  // A stop of its allocation: woken, with the change.
  auto stop = server_.StopAlloc((*first)->allocs[0]->id);
  ASSERT_TRUE(stop.ok());
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return second.has_value(); }));
  ASSERT_TRUE(second->ok());
  EXPECT_GT((*second)->index, index);
}

}  // namespace
}  // namespace drover::server
