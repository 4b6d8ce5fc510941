// Servers sharing their state in etcd, against a real etcd (docs/ha.md): one leader,
// followers that serve what it wrote and refuse writes, a successor that goes on from
// where it stopped, writes fenced by the term, and a prefix that is not ours refused.
#include "server/ha.h"

#include <gtest/gtest.h>

#include "etcd/state_backend.h"
#include "server/ha_test_cluster.h"
#include "server/state_test_util.h"
#include "server/test_fixtures.h"
#include "state/store.h"

namespace drover::server {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

class HaTest : public ::testing::Test, public test::HaTestCluster {
 protected:
  using test::HaTestCluster::Run;  // not ::testing::Test::Run
  void SetUp() override { ASSERT_TRUE(etcd_.ok()) << etcd_.Log(); }
};

TEST_F(HaTest, FollowersServeWhatTheLeaderWroteAndRefuseWrites) {
  Peer& a = Join("a");
  Peer& b = Join("b");
  ASSERT_TRUE(Until([&] { return LeaderOf({&a, &b}) != nullptr; }));
  Peer& leader = *LeaderOf({&a, &b});
  Peer& follower = &leader == &a ? b : a;

  ASSERT_TRUE(leader.server->RegisterNode(test::MakeNode("n1")).ok());
  Register(leader, test::MakeJob("web", 2));
  ASSERT_TRUE(Until([&] { return Allocs(leader, "web") == 2; }));
  ASSERT_TRUE(Run(leader.server->state().Flush()).ok());
  // The follower's view catches up with everything, indexes included.
  ASSERT_TRUE(Until([&] {
    return test::Snapshot(follower.server->state()) == test::Snapshot(leader.server->state());
  })) << test::Snapshot(follower.server->state()).dump()
      << "\n"
      << test::Snapshot(leader.server->state()).dump();
  EXPECT_EQ(Allocs(follower, "web"), 2u);

  // Writes are the leader's alone.
  EXPECT_TRUE(absl::IsUnavailable(follower.server->RegisterNode(test::MakeNode("n2")).status()));
  auto prepared = codec::PrepareJob(test::MakeJob("other"), "global");
  ASSERT_TRUE(prepared.ok());
  auto refused = Run(follower.server->RegisterJobDurably(*std::move(prepared)));
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_EQ(follower.server->state().GetJob("default", "other"), nullptr);

  // Both know who leads, and who the members are.
  ASSERT_TRUE(Until([&] { return follower.ha->Members().size() == 2; }));
  EXPECT_EQ(follower.ha->Leader()->name, leader.ha->self().name);
  for (const Member& m : follower.ha->Members())
    EXPECT_EQ(m.leader, m.name == leader.ha->self().name) << m.name;
}

TEST_F(HaTest, AnEmptyClusterElectsNoLeaderBeforeBootstrapExpectServers) {
  HaConfig two = Config();
  two.bootstrap_expect = 2;
  Peer& a = Add("a", two);
  ASSERT_TRUE(Run(a.ha->Connect()).ok());
  a.ha->Start();
  EXPECT_FALSE(Until([&] { return a.server->leader(); }, 1500ms));
  Peer& b = Add("b", two);
  ASSERT_TRUE(Run(b.ha->Connect()).ok());
  b.ha->Start();
  EXPECT_TRUE(Until([&] { return a.server->leader() || b.server->leader(); }, 10s));
}

TEST_F(HaTest, AFollowersBlockingQueryWakesOnTheLeadersWrite) {
  Peer& a = Join("a");
  ASSERT_TRUE(Until([&] { return a.server->leader(); }));
  Peer& b = Join("b");
  // Settled first: what the new leader writes as its term begins reaches b too.
  ASSERT_TRUE(Run(a.server->state().Flush()).ok());
  ASSERT_TRUE(
      Until([&] { return b.server->state().LatestIndex() >= a.server->state().LatestIndex(); }));
  const uint64_t seen = b.server->state().TableIndex(Table::kJobs);
  std::optional<uint64_t> woke;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        std::vector<Table> tables = {Table::kJobs};
        woke = co_await b.server->state().BlockUntil(tables, seen, 20s);
      },
      asio::detached);
  EXPECT_FALSE(Until([&] { return woke.has_value(); }, 300ms));  // nothing changed yet
  Register(a, test::MakeJob("web"));
  ASSERT_TRUE(Until([&] { return woke.has_value(); }, 5s));
  EXPECT_GT(*woke, seen);
  EXPECT_TRUE(Until([&] { return b.server->state().GetJob("default", "web") != nullptr; }));
}

TEST_F(HaTest, UnreachableEtcdIsRetriedUntilTheAgentStops) {
  HaConfig config = Config();
  config.endpoints = {"127.0.0.1:1"};  // nothing listens there
  Peer& p = Add("p", config);
  std::optional<absl::Status> connected;
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { connected = co_await p.ha->Connect(); },
      asio::detached);
  EXPECT_FALSE(Until([&] { return connected.has_value(); }, 1500ms));  // still retrying
  bool stopped = false;
  StartStop(p, stopped);
  ASSERT_TRUE(Until([&] { return connected.has_value() && stopped; }, 10s));
  EXPECT_TRUE(absl::IsCancelled(*connected)) << *connected;
}

TEST_F(HaTest, ASuccessorGoesOnFromEverythingItsPredecessorWrote) {
  Peer& a = Join("a");
  ASSERT_TRUE(Until([&] { return a.server->leader(); }));
  Peer& b = Join("b");
  ASSERT_TRUE(a.server->RegisterNode(test::MakeNode("n1")).ok());
  Register(a, test::MakeJob("web", 3));
  ASSERT_TRUE(Until([&] { return Allocs(a, "web") == 3; }));
  ASSERT_TRUE(Run(a.server->state().Flush()).ok());
  const uint64_t index_before = a.server->state().LatestIndex();
  std::set<std::string> allocs_before;
  for (const AllocPtr& alloc : a.server->state().AllocsByJob("default", "web"))
    allocs_before.insert(alloc->id);

  // a resigns (as on shutdown): b leads at once, with everything a wrote.
  Stop(a);
  ASSERT_TRUE(Until([&] { return b.server->leader(); }, 5s));
  EXPECT_GE(b.server->state().LatestIndex(), index_before);
  std::set<std::string> allocs_after;
  for (const AllocPtr& alloc : b.server->state().AllocsByJob("default", "web"))
    allocs_after.insert(alloc->id);
  EXPECT_EQ(allocs_after, allocs_before);  // none lost, none placed twice

  // Its writes go on above the old index.
  const EvalResponse resp = Register(b, test::MakeJob("api", 1));
  EXPECT_GT(resp.index, index_before);
  ASSERT_TRUE(Until([&] { return Allocs(b, "api") == 1; }));
  EXPECT_EQ(Allocs(b, "web"), 3u);
}

TEST_F(HaTest, ADeposedLeadersWritesAreFenced) {
  etcd::Client client({etcd_.endpoint()});
  etcd::Election first(client, clock_, "/drover/leader", "first", 2);
  auto term = Run(first.Campaign());
  ASSERT_TRUE(term.ok()) << term.status();
  bool failed = false;
  etcd::StateBackend backend(etcd::StateBackendOptions{.endpoints = {etcd_.endpoint()},
                                                       .prefix = "/drover",
                                                       .leader_key = "/drover/leader",
                                                       .term = *term,
                                                       .on_failure = [&] { failed = true; }});
  ASSERT_TRUE(backend.Commit({state::KvOp{.key = "evals/e1", .value = "x"}}).ok());
  ASSERT_TRUE(Run(first.Resign(*term)).ok());
  // Another term begins; the first one's writes are refused, whatever it believes.
  etcd::Election second(client, clock_, "/drover/leader", "second", 2);
  ASSERT_TRUE(Run(second.Campaign()).ok());
  absl::Status stale = backend.Commit({state::KvOp{.key = "evals/e2", .value = "y"}});
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_TRUE(failed);
  auto e2 = backend.Get("evals/e2");
  ASSERT_TRUE(e2.ok());
  EXPECT_FALSE(e2->has_value());
}

TEST_F(HaTest, ALargeCommitIsSplitIntoTransactionsEtcdAccepts) {
  etcd::Client client({etcd_.endpoint()});
  etcd::Election election(client, clock_, "/drover/leader", "me", 2);
  auto term = Run(election.Campaign());
  ASSERT_TRUE(term.ok());
  etcd::StateBackend backend(etcd::StateBackendOptions{.endpoints = {etcd_.endpoint()},
                                                       .prefix = "/drover",
                                                       .leader_key = "/drover/leader",
                                                       .term = *term});
  std::vector<state::KvOp> ops;
  for (int i = 0; i < 300; ++i)
    ops.push_back(
        state::KvOp{.key = "allocs/" + std::to_string(i), .value = std::string(5000, 'v')});
  ASSERT_TRUE(backend.Commit(ops).ok());
  // 128 operations and 768 KiB per transaction at most.
  EXPECT_GE(backend.transactions(), 3u);
  auto all = backend.Scan("allocs/");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 300u);
}

// The same writes through the embedded store and through etcd read back the same: the
// backends conform.
TEST_F(HaTest, WhatALeaderWroteIsWhatAFollowerLoads) {
  Peer& a = Join("a");
  ASSERT_TRUE(Until([&] { return a.server->leader(); }));
  StateStore& s = a.server->state();
  s.UpsertNode(test::MakeNode("n1"));
  model::Job job = test::MakeJob("web");
  s.UpsertJob(job);
  job.task_groups[0].count = 3;
  s.UpsertJob(job);  // version 1
  s.UpsertJob(test::MakeJob("gone"));
  EXPECT_TRUE(s.DeleteJob("default", "gone"));
  model::Allocation alloc;
  alloc.id = "a1";
  alloc.namespace_ = "default";
  alloc.job_id = "web";
  alloc.node_id = "n1";
  alloc.task_group = "web";
  alloc.desired_status = "run";
  alloc.client_status = "pending";
  alloc.job = s.GetJob("default", "web");
  s.UpsertAllocs({alloc});
  s.UpdateAllocsFromClient({{.id = "a1", .client_status = "running"}});
  ASSERT_TRUE(Run(s.Flush()).ok());
  const codec::Json written = test::Snapshot(s);

  // A server that joins later loads it all from etcd.
  Peer& b = Join("b");
  EXPECT_EQ(test::Snapshot(b.server->state()), written);
  EXPECT_EQ(b.server->state().JobVersions("default", "web").size(), 2u);
}

TEST_F(HaTest, AnUndecodableRecordIsSkippedCountedAndTheRestServed) {
  Peer& a = Join("a");
  ASSERT_TRUE(Until([&] { return a.server->leader(); }));
  Peer& b = Join("b");
  etcd::Client client({etcd_.endpoint()});
  ASSERT_TRUE(Run(client.Put("/drover/state/allocs/broken", "not a record")).ok());
  ASSERT_TRUE(a.server->RegisterNode(test::MakeNode("n1")).ok());
  ASSERT_TRUE(Run(a.server->state().Flush()).ok());
  ASSERT_TRUE(Until([&] { return b.server->state().GetNode("n1") != nullptr; }));
  EXPECT_EQ(b.server->state().skipped_records(), 1u);
  EXPECT_EQ(b.server->state().GetAlloc("broken"), nullptr);
}

TEST_F(HaTest, AJobTooLargeForOneEtcdRequestIsRefusedAtRegistration) {
  Server server(io_.get_executor(), pool_, clock_, ServerConfig{.max_job_record_bytes = 300});
  auto refused = server.RegisterJob(test::MakeJob("web"));
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("job is too large"), std::string::npos);
  EXPECT_EQ(server.state().GetJob("default", "web"), nullptr);
}

TEST_F(HaTest, APrefixHoldingSomethingElseIsRefusedByName) {
  etcd::Client client({etcd_.endpoint()});
  ASSERT_TRUE(Run(client.Put("/other/config", "x")).ok());
  HaConfig foreign = Config();
  foreign.prefix = "/other";
  Peer& p = Add("p", foreign);
  absl::Status s = Run(p.ha->Connect());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("'/other/' holds 1 keys that are not a Drover server state"),
            std::string::npos)
      << s;

  // Another region's cluster under the same prefix.
  Peer& q = Join("q");
  (void)q;
  HaConfig elsewhere = Config();
  elsewhere.region = "eu";
  Peer& r = Add("r", elsewhere);
  absl::Status t = Run(r.ha->Connect());
  EXPECT_TRUE(absl::IsFailedPrecondition(t)) << t;
  EXPECT_NE(t.message().find("another cluster (region 'global')"), std::string::npos) << t;
}

}  // namespace
}  // namespace drover::server
