// Node events: what the servers record about a node, and what a node may add.
#include <gtest/gtest.h>

#include "server/server.h"
#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::server {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

class NodeEventsTest : public ::testing::Test {
 protected:
  NodeEventsTest() { server_.Start(); }
  ~NodeEventsTest() override {
    server_.Stop();
    io_.restart();
    io_.poll();
    pool_.join();
  }
  // The messages of the node's events, oldest first.
  std::vector<std::string> Messages(const std::string& node_id) {
    std::vector<std::string> out;
    const NodePtr node = server_.state().GetNode(node_id);
    for (const model::NodeEvent& e : node->events)
      out.push_back(e.message);
    return out;
  }
  absl::StatusOr<EvalResponse> Await(asio::awaitable<absl::StatusOr<EvalResponse>> call) {
    std::optional<absl::StatusOr<EvalResponse>> out;
    auto run = [&, call = std::move(call)]() mutable -> asio::awaitable<void> {
      out = co_await std::move(call);
    };
    asio::co_spawn(io_, std::move(run), asio::detached);
    EXPECT_TRUE(testing::RunUntil(io_, [&] { return out.has_value(); }));
    return out.value_or(absl::DeadlineExceededError("no answer"));
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  Server server_{io_.get_executor(), pool_, clock_, ServerConfig{}};
};

TEST_F(NodeEventsTest, TheServersRecordRegistrationEligibilityDrainAndHeartbeats) {
  model::Node node = test::MakeNode("n1");
  // What a registration says about events is not taken.
  node.events.push_back({.message = "forged", .subsystem = "Cluster"});
  ASSERT_TRUE(server_.RegisterNode(node).ok());
  NodePtr stored = server_.state().GetNode("n1");
  ASSERT_EQ(stored->events.size(), 1u);
  EXPECT_EQ(stored->events[0].message, "Node registered");
  EXPECT_EQ(stored->events[0].subsystem, "Cluster");
  EXPECT_EQ(stored->events[0].timestamp, clock_.Now());
  EXPECT_EQ(stored->events[0].create_index, stored->create_index);
  node.attributes["kernel.version"] = "6.1";  // a changed registration keeps the events
  ASSERT_TRUE(server_.RegisterNode(node).ok());
  EXPECT_EQ(Messages("n1"), std::vector<std::string>{"Node registered"});

  ASSERT_TRUE(Await(server_.SetNodeEligibilityDurably("n1", "ineligible")).ok());
  ASSERT_TRUE(Await(server_.SetNodeEligibilityDurably("n1", "eligible")).ok());
  ASSERT_TRUE(
      Await(server_.UpdateNodeDrainDurably("n1", DrainSpec{.deadline = 1h}, false, {})).ok());
  // Nothing runs there: the drain completes at once.
  ASSERT_TRUE(testing::RunUntil(io_, [&] { return !server_.state().GetNode("n1")->drain; }));
  EXPECT_EQ(Messages("n1"),
            (std::vector<std::string>{"Node registered", "Node marked as ineligible for scheduling",
                                      "Node marked as eligible for scheduling",
                                      "Node drain strategy set", "Node drain complete"}));
  EXPECT_EQ(server_.state().GetNode("n1")->events.back().subsystem, "Drain");

  ASSERT_TRUE(testing::RunWithFakeClock(
      io_, clock_, [&] { return server_.state().GetNode("n1")->status == "down"; }));
  EXPECT_EQ(Messages("n1").back(), "Node heartbeat missed");
  ASSERT_TRUE(server_.Heartbeat("n1").ok());
  EXPECT_EQ(Messages("n1").back(), "Node reregistered by heartbeat");
}

TEST_F(NodeEventsTest, ANodesOwnEventsAreKeptTenAtMostAndStampedByTheServer) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  std::vector<model::NodeEvent> events;
  for (int i = 0; i < 10; ++i) {
    events.push_back({.message = "e" + std::to_string(i),
                      .subsystem = "Driver",
                      .details = {{"driver", "exec"}},
                      .timestamp = clock_.Now() - 1min});
  }
  events[8].timestamp = clock_.Now() + 1h;  // ahead of the server's clock
  events[9].timestamp = {};                 // missing
  ASSERT_TRUE(server_.EmitNodeEvents("n1", events).ok());
  NodePtr node = server_.state().GetNode("n1");
  ASSERT_EQ(node->events.size(), model::kMaxNodeEvents);  // "Node registered" dropped
  EXPECT_EQ(node->events.front().message, "e0");
  EXPECT_EQ(node->events.front().timestamp, clock_.Now() - 1min);
  EXPECT_EQ(node->events.front().details.at("driver"), "exec");
  EXPECT_EQ(node->events[8].timestamp, clock_.Now());
  EXPECT_EQ(node->events[9].timestamp, clock_.Now());
  EXPECT_EQ(node->events.back().create_index, node->modify_index);
}

TEST_F(NodeEventsTest, EventsBeyondTheBoundsAreRefusedAndChangeNothing) {
  ASSERT_TRUE(server_.RegisterNode(test::MakeNode("n1")).ok());
  const uint64_t before = server_.state().GetNode("n1")->modify_index;
  const model::NodeEvent ok{.message = "m", .subsystem = "Driver"};
  std::vector<std::vector<model::NodeEvent>> bad(5, {ok});
  bad[0] = std::vector<model::NodeEvent>(model::kMaxNodeEventsPerCall + 1, ok);
  bad[1].push_back({.message = "", .subsystem = "Driver"});
  bad[2].push_back(
      {.message = std::string(model::kMaxNodeEventMessageBytes + 1, 'x'), .subsystem = "Driver"});
  bad[3].push_back(ok);
  for (size_t i = 0; i <= model::kMaxNodeEventDetails; ++i)
    bad[3].back().details["k" + std::to_string(i)] = "v";
  bad[4].push_back({.message = "m", .subsystem = std::string(300, 's')});
  for (const auto& events : bad) {
    absl::Status s = server_.EmitNodeEvents("n1", events);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  }
  EXPECT_EQ(server_.state().GetNode("n1")->modify_index, before);
  EXPECT_TRUE(absl::IsNotFound(server_.EmitNodeEvents("nope", {ok})));
}

}  // namespace
}  // namespace drover::server
