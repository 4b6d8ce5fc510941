// The scheduler configuration: pausing the eval broker, deleting evaluations while it
// is paused (and only those that are safe to delete), check-and-set, and persistence.
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

class SchedulerConfigTest : public test::ServerFixture {
 protected:
  SchedulerConfigTest() : ServerFixture(ServerConfig{.memory_oversubscription = true}) {
    EXPECT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  }
  Server::SchedulerConfigUpdate Set(model::SchedulerConfig c,
                                    std::optional<uint64_t> cas = std::nullopt) {
    auto r = testing::Await(io_, server_.SetSchedulerConfigDurably(c, cas));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : Server::SchedulerConfigUpdate{};
  }
  absl::StatusOr<uint64_t> Delete(std::vector<std::string> ids) {
    return testing::Await(io_, server_.DeleteEvalsDurably(std::move(ids)));
  }
};

TEST_F(SchedulerConfigTest, DefaultsComeFromTheAgentConfigurationUntilOneIsSet) {
  model::SchedulerConfig c = server_.SchedulerConfiguration();
  EXPECT_TRUE(c.memory_oversubscription);
  EXPECT_EQ(c.algorithm, "binpack");
  EXPECT_EQ(c.modify_index, 0u);
  c.memory_oversubscription = false;
  Server::SchedulerConfigUpdate first = Set(c, /*cas=*/0);
  EXPECT_TRUE(first.updated);
  EXPECT_FALSE(server_.SchedulerConfiguration().memory_oversubscription);
  EXPECT_EQ(server_.SchedulerConfiguration().create_index, first.index);
  // A stale check-and-set changes nothing.
  c.pause_eval_broker = true;
  EXPECT_FALSE(Set(c, /*cas=*/first.index - 1).updated);
  EXPECT_FALSE(server_.SchedulerConfiguration().pause_eval_broker);
  EXPECT_TRUE(Set(c, first.index).updated);
  EXPECT_TRUE(server_.SchedulerConfiguration().pause_eval_broker);
  EXPECT_EQ(server_.SchedulerConfiguration().create_index, first.index);
}

TEST_F(SchedulerConfigTest, APausedBrokerLeavesEvaluationsPendingUntilItResumes) {
  model::SchedulerConfig c = server_.SchedulerConfiguration();
  c.pause_eval_broker = true;
  Set(c);
  auto resp = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(resp.ok());
  for (int i = 0; i < 20; ++i)
    io_.poll();
  EXPECT_EQ(server_.state().GetEval(resp->eval_id)->status, "pending");
  EXPECT_TRUE(server_.state().AllocsByJob("default", "web").empty());
  c.pause_eval_broker = false;
  Set(c);
  ASSERT_TRUE(EvalDone(resp->eval_id));
  EXPECT_EQ(server_.state().AllocsByJob("default", "web").size(), 1u);
}

TEST_F(SchedulerConfigTest, EvaluationsAreDeletedOnlyWhilePausedAndWhenSafe) {
  auto running = server_.RegisterJob(test::MakeJob("web"));
  ASSERT_TRUE(running.ok() && EvalDone(running->eval_id));
  AllocPtr alloc = server_.state().AllocsByJob("default", "web").at(0);
  model::AllocClientUpdate up;
  up.id = alloc->id;
  up.node_id = "n1";
  up.client_status = model::kClientRunning;
  ASSERT_TRUE(server_.UpdateAllocsFromClient("n1", {up}).ok());

  EXPECT_EQ(Delete({running->eval_id}).status().message(),
            "eval broker is enabled; eval broker must be paused to delete evals");
  model::SchedulerConfig c = server_.SchedulerConfiguration();
  c.pause_eval_broker = true;
  Set(c);
  // Its allocation runs: the evaluation is still needed.
  EXPECT_EQ(Delete({running->eval_id}).status().message(),
            "eval " + running->eval_id + " is not safe to delete");
  EXPECT_TRUE(absl::IsNotFound(Delete({"nope"}).status()));
  EXPECT_NE(server_.state().GetEval(running->eval_id), nullptr);

  // Once the job is stopped, it may go (as may the pending stop evaluation).
  auto stop = server_.DeregisterJob("default", "web", false);
  ASSERT_TRUE(stop.ok());
  auto deleted = Delete({running->eval_id, stop->eval_id, running->eval_id});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(server_.state().GetEval(running->eval_id), nullptr);
  EXPECT_EQ(server_.state().GetEval(stop->eval_id), nullptr);
  c.pause_eval_broker = false;
  Set(c);
  for (int i = 0; i < 20; ++i)
    io_.poll();  // the worker skips the deleted evaluation it had queued
}

TEST(SchedulerConfigPersistTest, TheConfigurationSurvivesARestart) {
  testing::TempDir dir;
  asio::io_context io;
  common::FakeClock clock;
  model::SchedulerConfig c;
  c.pause_eval_broker = true;
  c.memory_oversubscription = true;
  uint64_t index = 0;
  {
    StateStore s(io.get_executor(), clock);
    auto db = OpenServerStore(dir.path().string());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(s.Attach(std::move(*db)).ok());
    index = s.SetSchedulerConfig(c).modify_index;
    EXPECT_TRUE(testing::Await(io, s.Flush()).ok());
  }
  StateStore s(io.get_executor(), clock);
  auto db = OpenServerStore(dir.path().string());
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE(s.Attach(std::move(*db)).ok());
  ASSERT_TRUE(s.scheduler_config().has_value());
  EXPECT_TRUE(s.scheduler_config()->pause_eval_broker);
  EXPECT_TRUE(s.scheduler_config()->memory_oversubscription);
  EXPECT_EQ(s.scheduler_config()->modify_index, index);
  EXPECT_GE(s.LatestIndex(), index);
  // An operator snapshot carries it.
  auto records = s.SnapshotRecords()();
  bool found = false;
  for (const auto& r : records)
    found |= r.key == "meta/scheduler";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace drover::server
