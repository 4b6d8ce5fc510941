// Three servers sharing their state in one etcd, and two clients, all real processes on
// loopback (docs/ha.md): jobs submitted to a follower run; the leader killed during a
// burst of registrations, stopped for longer than its lease, or restarted with the
// others one at a time loses and duplicates nothing; etcd stopped for a while leaves
// reads served and writes refused until it returns.
#include <signal.h>

#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/etcd_process.h"
#include "tests/integration/agent_fixture.h"
#include "tests/integration/agent_process.h"

namespace drover::cluster {
namespace {

using namespace std::chrono_literals;  // NOLINT
using integration::AgentProcess;
using integration::RawExecJob;

constexpr int kLeaseTtlSeconds = 2;

class HaClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.ok()) << etcd_.Log();
    const std::string server_conf = (conf_.path() / "server.hcl").string();
    std::ofstream(server_conf) << "server {\n  min_heartbeat_ttl = \"1s\"\n  heartbeat_grace = "
                                  "\"2s\"\n  etcd {\n    endpoints = [\""
                               << etcd_.endpoint() << "\"]\n    lease_ttl = \"" << kLeaseTtlSeconds
                               << "s\"\n    dial_timeout = \"1s\"\n  }\n}\n";
    const std::string client_conf = (conf_.path() / "client.hcl").string();
    std::ofstream(client_conf) << "plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n";
    std::string rpc_addrs;
    for (int i = 0; i < 3; ++i) {
      servers_.push_back(std::make_unique<AgentProcess>(
          std::vector<std::string>{"-config", server_conf, "-node", "server-" + std::to_string(i)},
          AgentProcess::Role::kServer));
      AgentProcess& s = *servers_.back();
      ASSERT_TRUE(s.ok() && !s.rpc_address().empty()) << s.log();
      // Clients know the servers by these: a restarted server comes back on its port.
      s.SetFlag("-rpc-port", s.rpc_address().substr(s.rpc_address().rfind(':') + 1));
      rpc_addrs += (rpc_addrs.empty() ? "" : ",") + s.rpc_address();
    }
    for (int i = 0; i < 2; ++i) {
      clients_.push_back(std::make_unique<AgentProcess>(
          std::vector<std::string>{"-config", client_conf, "-servers", rpc_addrs, "-node",
                                   "client-" + std::to_string(i)},
          AgentProcess::Role::kClient));
      ASSERT_TRUE(clients_.back()->ok()) << clients_.back()->log();
    }
    ASSERT_GE(WaitForLeader(), 0) << Logs();
    ASSERT_TRUE(testing::WaitFor([&] { return ReadyNodes() == 2; }, 30s)) << Logs();
  }
  void TearDown() override {
    for (int i : stopped_)
      ::kill(servers_[i]->pid(), SIGCONT);
    for (auto& c : clients_)
      c->Stop();
    for (auto& s : servers_)
      s->Stop();
    for (auto& o : others_)
      o->Stop();
    // After the stops: an agent that does not stop is a failure worth its log.
    if (HasFailure())
      std::cerr << Logs();
    clients_.clear();
    servers_.clear();
  }

  std::string Logs() const {
    std::string out;
    for (size_t i = 0; i < servers_.size(); ++i)
      out += "---- server-" + std::to_string(i) + " ----\n" + servers_[i]->log();
    for (size_t i = 0; i < clients_.size(); ++i)
      out += "---- client-" + std::to_string(i) + " ----\n" + clients_[i]->log();
    return out + "---- etcd ----\n" + etcd_.Log();
  }
  bool Live(int i) const { return !down_.contains(i) && !stopped_.contains(i); }
  // Whether server `i` says it leads.
  bool SaysLeader(int i) {
    auto r = servers_[i]->http().Do("GET", "/v1/agent/self", "", 2000ms);
    if (!r.ok())
      return false;
    auto self = codec::ParseJson(r->body);
    return self.ok() && (*self)["stats"]["nomad"]["leader"] == "true";
  }
  // The live server that leads, once one does (-1 after `timeout`).
  int WaitForLeader(std::chrono::milliseconds timeout = 20s) {
    int leader = -1;
    testing::WaitFor(
        [&] {
          for (int i = 0; i < static_cast<int>(servers_.size()); ++i) {
            if (Live(i) && SaysLeader(i)) {
              leader = i;
              return true;
            }
          }
          return false;
        },
        timeout);
    return leader;
  }
  int AnyLive(int except = -1) {
    for (int i = 0; i < static_cast<int>(servers_.size()); ++i) {
      if (i != except && Live(i))
        return i;
    }
    return -1;
  }
  size_t ReadyNodes() {
    auto r = servers_[AnyLive()]->http().Do("GET", "/v1/nodes");
    if (!r.ok())
      return 0;
    auto nodes = codec::ParseJson(r->body);  // named: a range-for over a temporary's value dangles
    if (!nodes.ok())
      return 0;
    size_t ready = 0;
    for (const auto& n : *nodes)
      ready += n["Status"] == "ready" ? 1 : 0;
    return ready;
  }
  // PUT /v1/jobs through server `via`, retried while the cluster has no leader (as a
  // user would); whether it was taken.
  bool Register(int via, const std::string& id, std::chrono::seconds timeout = 20s) {
    const std::string body = RawExecJob(id, "service", "sleep 3600");
    return testing::WaitFor(
        [&] { return servers_[via]->http().Do("PUT", "/v1/jobs", body, 5000ms).ok(); }, timeout);
  }
  // The job's allocations that are meant to run, as server `via` lists them.
  std::vector<codec::Json> LiveAllocs(int via, const std::string& job) {
    std::vector<codec::Json> out;
    auto r = servers_[via]->http().Do("GET", "/v1/job/" + job + "/allocations");
    if (!r.ok())
      return out;
    auto allocs = codec::ParseJson(r->body);
    if (!allocs.ok())
      return out;
    for (const auto& a : *allocs) {
      if (a["DesiredStatus"] == "run")
        out.push_back(a);
    }
    return out;
  }
  // Waits until each of `jobs` has exactly one allocation, running; fails the test
  // naming what it saw otherwise.
  void ExpectEachRunsOnce(const std::vector<std::string>& jobs,
                          std::chrono::seconds timeout = 30s) {
    const int via = AnyLive();
    std::string last;
    const bool settled = testing::WaitFor(
        [&] {
          for (const std::string& job : jobs) {
            std::vector<codec::Json> allocs = LiveAllocs(via, job);
            if (allocs.size() != 1 || allocs[0]["ClientStatus"] != "running") {
              last = job + ": " + codec::Json(allocs).dump();
              return false;
            }
          }
          return true;
        },
        timeout);
    EXPECT_TRUE(settled) << last;
  }
  std::map<std::string, std::string> AllocIds(const std::vector<std::string>& jobs) {
    std::map<std::string, std::string> out;
    for (const std::string& job : jobs) {
      for (const auto& a : LiveAllocs(AnyLive(), job))
        out[job] = a["ID"].get<std::string>();
    }
    return out;
  }
  void Pause(int i) {
    ::kill(servers_[i]->pid(), SIGSTOP);
    stopped_.insert(i);
  }
  void Resume(int i) {
    ::kill(servers_[i]->pid(), SIGCONT);
    stopped_.erase(i);
  }

  testing::EtcdProcess etcd_;
  testing::TempDir conf_;
  std::vector<std::unique_ptr<AgentProcess>> servers_;
  std::vector<std::unique_ptr<AgentProcess>> clients_;
  std::vector<std::unique_ptr<AgentProcess>> others_;  // outside the cluster
  std::set<int> down_;                                 // killed
  std::set<int> stopped_;                              // SIGSTOPped
};

TEST_F(HaClusterTest, AJobSubmittedToAFollowerRunsAndEveryServerTellsWhoLeads) {
  const int leader = WaitForLeader();
  const int follower = (leader + 1) % 3;
  ASSERT_TRUE(Register(follower, "web"));
  ExpectEachRunsOnce({"web"});
  // Each server knows the leader and the peers.
  const std::string leader_rpc = servers_[leader]->rpc_address();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        testing::WaitFor([&] { return servers_[i]->Get("/v1/status/leader") == leader_rpc; }, 10s))
        << i;
    EXPECT_EQ(servers_[i]->Get("/v1/status/peers").size(), 3u);
    codec::Json raft = servers_[i]->Get("/v1/operator/raft/configuration");
    ASSERT_EQ(raft["Servers"].size(), 3u) << raft.dump();
    int leaders = 0;
    for (const auto& s : raft["Servers"])
      leaders += s["Leader"].get<bool>() ? 1 : 0;
    EXPECT_EQ(leaders, 1) << raft.dump();
  }
  EXPECT_EQ(servers_[leader]->Get("/v1/agent/self")["stats"]["raft"]["state"], "Leader");
  auto jobs = servers_[follower]->http().Do("GET", "/v1/jobs");
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->headers["x-nomad-knownleader"], "true");
  codec::Json raft = servers_[follower]->Get("/v1/agent/self")["stats"]["raft"];
  EXPECT_EQ(raft["state"], "Follower");
  EXPECT_EQ(raft["backend"], "etcd");
  EXPECT_EQ(raft["state_records_skipped"], "0");
  integration::CliResult members = clients_[0]->Cli({"server", "members"});
  ASSERT_EQ(members.exit_code, 0) << members.err;
  for (const char* name : {"server-0.global", "server-1.global", "server-2.global"})
    EXPECT_NE(members.out.find(name), std::string::npos) << members.out;
  EXPECT_EQ(std::count(members.out.begin(), members.out.end(), '\n'), 4) << members.out;
  EXPECT_NE(members.out.find("alive   true"), std::string::npos) << members.out;
}

TEST_F(HaClusterTest, TheLeaderKilledDuringABurstLosesAndDuplicatesNothing) {
  const int leader = WaitForLeader();
  const int follower = (leader + 1) % 3;
  std::vector<std::string> first;
  std::vector<std::string> all;
  for (int i = 0; i < 6; ++i) {
    first.push_back("before-" + std::to_string(i));
    ASSERT_TRUE(Register(follower, first.back()));
  }
  ExpectEachRunsOnce(first);
  const std::map<std::string, std::string> running = AllocIds(first);
  all = first;
  // The burst: the leader dies in the middle of it.
  for (int i = 0; i < 12; ++i) {
    if (i == 4) {
      servers_[leader]->Kill();
      down_.insert(leader);
    }
    all.push_back("burst-" + std::to_string(i));
    ASSERT_TRUE(Register(follower, all.back())) << all.back();
  }
  const int successor = WaitForLeader();
  ASSERT_GE(successor, 0);
  EXPECT_NE(successor, leader);
  ExpectEachRunsOnce(all);
  // The tasks that ran before kept running: the same allocations.
  EXPECT_EQ(AllocIds(first), running);
}

TEST_F(HaClusterTest, ANewLeaderComesWithinTheLeaseAfterTheLeaderIsKilled) {
  const int leader = WaitForLeader();
  const auto killed_at = std::chrono::steady_clock::now();
  servers_[leader]->Kill();
  down_.insert(leader);
  const int successor = WaitForLeader(10s);
  const auto took = std::chrono::steady_clock::now() - killed_at;
  ASSERT_GE(successor, 0);
  EXPECT_LE(took, std::chrono::seconds(kLeaseTtlSeconds + 2))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  ASSERT_TRUE(Register(successor, "after"));
  ExpectEachRunsOnce({"after"});
}

TEST_F(HaClusterTest, ALeaderStoppedLongerThanItsLeaseStepsDownWhenItResumes) {
  const int leader = WaitForLeader();
  ASSERT_TRUE(Register(leader, "before"));
  ExpectEachRunsOnce({"before"});
  Pause(leader);
  const int successor = WaitForLeader(std::chrono::seconds(kLeaseTtlSeconds + 5));
  ASSERT_GE(successor, 0);
  ASSERT_NE(successor, leader);
  ASSERT_TRUE(Register(successor, "during"));
  ExpectEachRunsOnce({"before", "during"});
  Resume(leader);
  // It knows it lost, says who leads now, and wrote nothing meanwhile.
  EXPECT_TRUE(testing::WaitFor([&] { return !SaysLeader(leader); }, 10s));
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return servers_[leader]->Get("/v1/status/leader") == servers_[successor]->rpc_address();
      },
      10s));
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return servers_[leader]->log().find("gave up cluster leadership") != std::string::npos;
      },
      10s));
  ExpectEachRunsOnce({"before", "during"});
  ASSERT_TRUE(Register(leader, "after"));  // forwarded to the new leader
  ExpectEachRunsOnce({"before", "during", "after"});
}

TEST_F(HaClusterTest, WithoutEtcdReadsAreServedAndWritesRefusedUntilItReturns) {
  const int leader = WaitForLeader();
  ASSERT_TRUE(Register(leader, "before"));
  ExpectEachRunsOnce({"before"});
  etcd_.Pause();
  for (int i = 0; i < 3; ++i) {
    auto jobs = servers_[i]->http().Do("GET", "/v1/jobs", "", 3000ms);
    ASSERT_TRUE(jobs.ok()) << i << ": " << jobs.status();
    EXPECT_NE(jobs->body.find("\"before\""), std::string::npos) << jobs->body;
  }
  auto refused = servers_[(leader + 1) % 3]->http().Do(
      "PUT", "/v1/jobs", RawExecJob("during", "service", "sleep 3600"), 15000ms);
  EXPECT_FALSE(refused.ok());
  const std::string why(refused.status().message());
  EXPECT_TRUE(why.find("etcd") != std::string::npos ||
              why.find("No cluster leader") != std::string::npos)
      << why;
  // The leader gave up its term (it could not keep its lease): it knows of no leader.
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        auto r = servers_[leader]->http().Do("GET", "/v1/jobs", "", 3000ms);
        return r.ok() && r->headers["x-nomad-knownleader"] == "false";
      },
      10s));
  etcd_.Resume();
  ASSERT_GE(WaitForLeader(20s), 0);
  ASSERT_TRUE(Register(AnyLive(), "after"));
  ExpectEachRunsOnce({"before", "after"});
}

TEST_F(HaClusterTest, ARollingRestartOfEveryServerLosesAndDuplicatesNothing) {
  std::vector<std::string> jobs;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3; ++i) {
      jobs.push_back("r" + std::to_string(round) + "-" + std::to_string(i));
      ASSERT_TRUE(Register(AnyLive(round), jobs.back()));
    }
    // Running: a client only ever learns of committed allocations.
    ExpectEachRunsOnce(jobs);
    const std::map<std::string, std::string> before = AllocIds(jobs);
    servers_[round]->Stop();
    down_.insert(round);
    jobs.push_back("while-" + std::to_string(round) + "-down");
    ASSERT_TRUE(Register(AnyLive(round), jobs.back()));
    servers_[round]->Restart();
    ASSERT_TRUE(servers_[round]->ok()) << servers_[round]->log();
    down_.erase(round);
    ASSERT_GE(WaitForLeader(), 0);
    // Allocations placed before stay as they were.
    for (const auto& [job, id] : before)
      EXPECT_EQ(AllocIds({job})[job], id) << job;
  }
  ExpectEachRunsOnce(jobs);
}

// Migration: a single embedded server's state, saved with `operator snapshot save`,
// restored into the cluster through a follower; the job it held runs on the cluster's
// clients (their nodes register again: a restore replaces the whole state).
TEST_F(HaClusterTest, ASingleServersStateMovesIntoTheClusterBySnapshot) {
  // Kept by the fixture: destroying an AgentProcess kills every child of the test
  // process, the cluster's agents included.
  others_.push_back(std::make_unique<AgentProcess>(std::vector<std::string>{"-node", "single"},
                                                   AgentProcess::Role::kServer));
  AgentProcess& single = *others_.back();
  ASSERT_TRUE(single.ok()) << single.log();
  auto put = single.http().Do("PUT", "/v1/jobs", RawExecJob("legacy", "service", "sleep 3600"));
  ASSERT_TRUE(put.ok()) << put.status();
  const std::string file = (conf_.path() / "single.snap").string();
  integration::CliResult save = single.Cli({"operator", "snapshot", "save", file});
  ASSERT_EQ(save.exit_code, 0) << save.err;
  EXPECT_NE(save.out.find("State file written to " + file), std::string::npos) << save.out;
  EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::group_read,
            std::filesystem::perms::none);  // it holds node secrets
  integration::CliResult inspect = single.Cli({"operator", "snapshot", "inspect", file});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("Region"), std::string::npos) << inspect.out;
  single.Stop();

  ASSERT_TRUE(Register(0, "replaced"));  // the cluster's own state goes
  const int leader = WaitForLeader();
  const int follower = (leader + 1) % 3;
  integration::CliResult restore =
      servers_[follower]->Cli({"operator", "snapshot", "restore", file});
  ASSERT_EQ(restore.exit_code, 0) << restore.out << restore.err;
  EXPECT_NE(restore.out.find("Snapshot Restored"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(testing::WaitFor(
        [&] {
          auto job = servers_[i]->http().Do("GET", "/v1/job/legacy");
          auto gone = servers_[i]->http().Do("GET", "/v1/job/replaced");
          return job.ok() && !gone.ok();
        },
        15s))
        << i;
  }
  ExpectEachRunsOnce({"legacy"}, 60s);
  // A file that is not a snapshot is refused before anything changes.
  const std::string junk = clients_[0]->WriteFile("junk.snap", "{\"Job\": {}}");
  integration::CliResult refused = servers_[leader]->Cli({"operator", "snapshot", "restore", junk});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("not a Drover snapshot"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace drover::cluster
