// The client protocol end to end over loopback: a real server behind the RPC routes on
// a real HTTP listener, and the client side (rpc::RemoteServerRpc) calling it.
#include <gtest/gtest.h>

#include "agent/server_adapter.h"
#include "api/api_context.h"
#include "api/http_server.h"
#include "rpc/http_call.h"
#include "rpc/protocol.h"
#include "rpc/remote_server_rpc.h"
#include "server/server.h"
#include "server/test_fixtures.h"
#include "testing/test_util.h"

namespace drover::agent {
namespace {

using namespace std::chrono_literals;                     // NOLINT
using namespace asio::experimental::awaitable_operators;  // NOLINT
using api::ApiContext;
using api::HttpServer;
using api::Router;

class RpcEndpointsTest : public ::testing::Test {
 protected:
  RpcEndpointsTest() {
    server_.Start();
    ctx_.server = &server_api_;
    ctx_.pool = &pool_;
    ctx_.clock = &clock_;
    api::RegisterRpcRoutes(router_, ctx_);
    auto port = http_.Listen("127.0.0.1", 0);
    EXPECT_TRUE(port.ok()) << port.status();
    address_ = "127.0.0.1:" + std::to_string(*port);
    http_.Start();
  }
  ~RpcEndpointsTest() override {
    http_.Stop();
    server_.Stop();
    io_.restart();
    io_.poll();
    pool_.join();
  }

  // Runs `work` on the loop to completion.
  template <typename T>
  T Run(asio::awaitable<T> work) {
    std::optional<T> out;
    asio::co_spawn(
        io_,
        [](asio::awaitable<T> w, std::optional<T>* o) -> asio::awaitable<void> {
          o->emplace(co_await std::move(w));
        }(std::move(work), &out),
        asio::detached);
    EXPECT_TRUE(testing::RunUntil(
        io_, [&] { return out.has_value(); }, 20s));
    return std::move(*out);
  }
  std::unique_ptr<rpc::RemoteServerRpc> Remote(std::vector<std::string> servers = {}) {
    if (servers.empty())
      servers = {address_};
    return std::make_unique<rpc::RemoteServerRpc>(
        pool_, rpc::RemoteServerRpcOptions{.servers = std::move(servers), .call_timeout = 5s});
  }
  absl::StatusOr<rpc::HttpReply> Raw(rpc::HttpCall call) {
    return Run(rpc::SendHttp(address_, std::move(call), 5s));
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::RealClock clock_;
  server::Server server_{io_.get_executor(), pool_, clock_, server::ServerConfig{}};
  ServerAdapter server_api_{server_};
  ApiContext ctx_;
  Router router_;
  HttpServer http_{io_.get_executor(), router_};
  std::string address_;
};

TEST_F(RpcEndpointsTest, ANodeRegistersHeartbeatsGetsItsAllocationsAndReportsThem) {
  auto remote = Remote();
  model::Node node = server::test::MakeNode("n1");
  auto ttl = Run(remote->RegisterNode(node));
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_GE(*ttl, server_.config().min_heartbeat_ttl);
  EXPECT_EQ(server_.state().GetNode("n1")->secret_id, "secret-n1");
  ASSERT_TRUE(Run(remote->Heartbeat("n1")).ok());

  auto registered = server_.RegisterJob(server::test::MakeJob("web", 2));
  ASSERT_TRUE(registered.ok()) << registered.status();
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return server_.state().AllocsByNode("n1").size() == 2; }, 10s));
  auto got = Run(remote->GetNodeAllocations("n1", 0, 1s));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->allocs.size(), 2u);
  EXPECT_EQ(got->allocs[0]->job_id, "web");
  ASSERT_NE(got->allocs[0]->job, nullptr);  // the whole job travels with it

  model::AllocClientUpdate u{.id = got->allocs[0]->id, .node_id = "n1", .client_status = "running"};
  ASSERT_TRUE(Run(remote->UpdateAllocations({u})).ok());
  EXPECT_EQ(server_.state().GetAlloc(u.id)->client_status, "running");
  // The node's own report does not wake its query: it runs out its wait, unchanged.
  auto same = Run(remote->GetNodeAllocations("n1", got->index, 200ms));
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->index, got->index);
  // A change the server makes to one of its allocations does.
  ASSERT_TRUE(server_.StopAlloc(u.id).ok());
  auto next = Run(remote->GetNodeAllocations("n1", got->index, 10s));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_GT(next->index, got->index);

  // Events about the node itself reach its record; beyond the bounds, nothing does.
  model::NodeEvent e{.message = "Driver exec is unhealthy",
                     .subsystem = "Driver",
                     .details = {{"driver", "exec"}}};
  ASSERT_TRUE(Run(remote->EmitNodeEvents("n1", {e})).ok());
  EXPECT_EQ(server_.state().GetNode("n1")->events.back().message, "Driver exec is unhealthy");
  e.message = std::string(model::kMaxNodeEventMessageBytes + 1, 'x');
  EXPECT_TRUE(absl::IsInvalidArgument(Run(remote->EmitNodeEvents("n1", {e}))));
  EXPECT_EQ(server_.state().GetNode("n1")->events.back().message, "Driver exec is unhealthy");
}

TEST_F(RpcEndpointsTest, AWrongSecretOrAnotherNodesAllocationIsRefusedAndChangesNothing) {
  auto remote = Remote();
  ASSERT_TRUE(Run(remote->RegisterNode(server::test::MakeNode("n1"))).ok());
  ASSERT_TRUE(server_.RegisterNode(server::test::MakeNode("n2")).ok());
  ASSERT_TRUE(server_.RegisterJob(server::test::MakeJob("web", 1)).ok());
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return server_.state().ListAllocs("*", "").size() == 1; }, 10s));
  const server::AllocPtr alloc = server_.state().ListAllocs("*", "")[0];

  // The same ID with another secret: neither registration nor calls are taken.
  model::Node impostor = server::test::MakeNode("n1");
  impostor.secret_id = "guess";
  impostor.name = "impostor";
  auto evil = Remote();
  auto refused = Run(evil->RegisterNode(impostor));
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status())) << refused.status();
  EXPECT_EQ(server_.state().GetNode("n1")->name, "node-n1");
  EXPECT_TRUE(absl::IsPermissionDenied(Run(evil->Heartbeat("n1")).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(Run(evil->GetNodeAllocations("n1", 0, 1s)).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(
      Run(evil->EmitNodeEvents("n1", {{.message = "forged", .subsystem = "Driver"}}))));
  EXPECT_EQ(server_.state().GetNode("n1")->events.size(), 1u);  // "Node registered"

  // A node reports on another node's allocation: refused, nothing changes.
  const std::string other = alloc->node_id == "n1" ? "n2" : "n1";
  model::Node node = server::test::MakeNode(other);
  auto as_other = Remote();
  ASSERT_TRUE(Run(as_other->RegisterNode(node)).ok());
  model::AllocClientUpdate u{.id = alloc->id, .node_id = alloc->node_id, .client_status = "failed"};
  EXPECT_TRUE(absl::IsPermissionDenied(Run(as_other->UpdateAllocations({u}))));
  EXPECT_EQ(server_.state().GetAlloc(alloc->id)->client_status, alloc->client_status);

  // A node the server does not know must register: NotFound, which the client
  // answers by registering.
  auto unknown = Raw({.method = "PUT",
                      .target = std::string(rpc::kHeartbeatPath),
                      .headers = {{std::string(rpc::kRegionHeader), "global"},
                                  {std::string(rpc::kNodeIdHeader), "n3"},
                                  {std::string(rpc::kNodeSecretHeader), "x"}}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(server_.state().GetNode("n3"), nullptr);
}

TEST_F(RpcEndpointsTest, MalformedCallsGetClearErrors) {
  auto missing = Raw({.method = "PUT", .target = std::string(rpc::kHeartbeatPath)});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 400);  // no region: not this server's
  auto no_node = Raw({.method = "PUT",
                      .target = std::string(rpc::kHeartbeatPath),
                      .headers = {{std::string(rpc::kRegionHeader), "global"}}});
  ASSERT_TRUE(no_node.ok());
  EXPECT_EQ(no_node->status, 401);
  EXPECT_EQ(no_node->body, "missing node ID");
  auto garbage = Raw({.method = "PUT",
                      .target = std::string(rpc::kRegisterPath),
                      .headers = {{std::string(rpc::kRegionHeader), "global"}},
                      .body = "{not json"});
  ASSERT_TRUE(garbage.ok());
  EXPECT_EQ(garbage->status, 400);
  EXPECT_NE(garbage->body.find("node: invalid JSON"), std::string::npos) << garbage->body;
  auto other_region = Raw({.method = "PUT",
                           .target = std::string(rpc::kRegisterPath),
                           .headers = {{std::string(rpc::kRegionHeader), "eu"}},
                           .body = rpc::EncodeNode(server::test::MakeNode("n9"))});
  ASSERT_TRUE(other_region.ok());
  EXPECT_EQ(other_region->status, 400);
  EXPECT_NE(other_region->body.find("No path to region \"eu\""), std::string::npos);
  EXPECT_EQ(server_.state().GetNode("n9"), nullptr);
}

TEST_F(RpcEndpointsTest, TheClientFailsOverToAServerThatAnswers) {
  // A port nothing listens on: bound, then closed.
  HttpServer gone(io_.get_executor(), router_);
  auto dead_port = gone.Listen("127.0.0.1", 0);
  ASSERT_TRUE(dead_port.ok());
  gone.Stop();
  const std::string dead = "127.0.0.1:" + std::to_string(*dead_port);
  auto remote = Remote({dead, address_});
  ASSERT_TRUE(Run(remote->RegisterNode(server::test::MakeNode("n1"))).ok());
  EXPECT_EQ(remote->current_server(), address_);
  auto none = Remote({dead});
  auto failed = Run(none->RegisterNode(server::test::MakeNode("n2")));
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_NE(failed.status().message().find(dead), std::string::npos);
}

// A node registered as bound to every address is reached where its calls come from.
TEST_F(RpcEndpointsTest, ANodeBoundToEveryAddressIsReachedWhereItsCallsComeFrom) {
  model::Node node = server::test::MakeNode("n1");
  node.http_addr = "0.0.0.0:4646";
  ASSERT_TRUE(Run(Remote()->RegisterNode(node)).ok());
  EXPECT_EQ(server_.state().GetNode("n1")->http_addr, "127.0.0.1:4646");
  node.http_addr = "no-port";
  auto bad = Run(Remote()->RegisterNode(node));
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
}

// A node whose registered address is its server's own: a client call for its
// allocation is forwarded once, and the server answers the forwarded one itself.
TEST_F(RpcEndpointsTest, AForwardedCallIsNeverForwardedAgain) {
  RegisterRoutes(router_, ctx_);
  model::Node node = server::test::MakeNode("n1");
  node.http_addr = address_;
  ASSERT_TRUE(server_.RegisterNode(node).ok());
  ASSERT_TRUE(server_.RegisterJob(server::test::MakeJob("web", 1)).ok());
  ASSERT_TRUE(testing::RunUntil(
      io_, [&] { return server_.state().AllocsByNode("n1").size() == 1; }, 10s));
  const std::string alloc = server_.state().AllocsByNode("n1")[0]->id;
  auto reply = Raw({.target = "/v1/client/fs/ls/" + alloc + "?path=/"});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(reply->body, "Unknown allocation \"" + alloc + "\"");
}

// A long poll cancelled by its caller (the client shutting down) ends at once, not
// when the server's wait ends.
TEST_F(RpcEndpointsTest, ACancelledLongPollEndsAtOnce) {
  auto remote = Remote();
  ASSERT_TRUE(Run(remote->RegisterNode(server::test::MakeNode("n1"))).ok());
  auto first = Run(remote->GetNodeAllocations("n1", 0, 1s));
  ASSERT_TRUE(first.ok());
  auto poll_or_timer = [&]() -> asio::awaitable<bool> {
    asio::steady_timer timer(co_await asio::this_coro::executor, 200ms);
    auto r = co_await (remote->GetNodeAllocations("n1", first->index + 1000, 5min) ||
                       timer.async_wait(asio::use_awaitable));
    co_return r.index() == 1;
  };
  EXPECT_TRUE(Run(poll_or_timer()));  // the timer won, and Run returned within its deadline
}

}  // namespace
}  // namespace drover::agent
