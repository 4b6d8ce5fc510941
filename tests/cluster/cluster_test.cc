// A server and client agents as separate processes (docs/cluster.md): jobs spread over
// the clients, the API and CLI work through a client-only agent, and a server that is
// killed and restarted finds its clients still running their tasks.
#include "tests/cluster/cluster.h"

#include <signal.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::cluster {
namespace {

using namespace std::chrono_literals;  // NOLINT
using integration::RawExecJob;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.ok()) << cluster_.Logs();
    ASSERT_TRUE(cluster_.WaitForReadyNodes(3)) << cluster_.Logs();
  }
  void TearDown() override {
    if (HasFailure())
      std::cerr << cluster_.Logs();
  }

  // The job's allocations as the server lists them.
  codec::Json Allocs(const std::string& job) {
    return cluster_.server().Get("/v1/job/" + job + "/allocations");
  }
  // Waits until `n` allocations of `job` have `status`.
  bool WaitAllocs(const std::string& job, size_t n, const std::string& status,
                  std::chrono::seconds timeout = 30s) {
    return testing::WaitFor(
        [&] {
          size_t matching = 0;
          for (const auto& a : Allocs(job))
            matching += a["ClientStatus"] == status ? 1 : 0;
          return matching == n;
        },
        timeout);
  }
  // The client agent whose node runs `alloc`.
  AgentProcess& ClientOf(const codec::Json& alloc) {
    for (size_t i = 0; i < cluster_.clients(); ++i) {
      if (cluster_.NodeId(i) == alloc["NodeID"])
        return cluster_.client(i);
    }
    ADD_FAILURE() << "no client runs " << alloc.dump();
    return cluster_.client(0);
  }

  // The pid the job's task wrote to alloc/pid, read from the node that runs `alloc_id`
  // (0 when it cannot be read: the test fails).
  int TaskPid(AgentProcess& node, const std::string& alloc_id) {
    auto text = node.http().Do("GET", "/v1/client/fs/cat/" + alloc_id + "?path=alloc/pid");
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? std::atoi(text->body.c_str()) : 0;
  }

  // Runs `node eligibility <flag>` for each of the clients' nodes in `which`.
  void SetEligibility(std::initializer_list<size_t> which, const std::string& flag) {
    for (size_t i : which) {
      CliResult r = cluster_.client(0).Cli({"node", "eligibility", flag, cluster_.NodeId(i)});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }

  Cluster cluster_;
};

// Each allocation on its own node (distinct_hosts), run by that node's agent; the
// job is registered and read through a client-only agent, which forwards to the
// server.
TEST_F(ClusterTest, AServiceJobSpreadsOverThreeClients) {
  const std::string job = cluster_.client(0).WriteFile(
      "web.json",
      RawExecJob(
          "web", "service", "sleep 3600",
          R"({"Count": 3, "Constraints": [{"Operand": "distinct_hosts", "RTarget": "true"}]})"));
  CliResult run = cluster_.client(0).Cli({"job", "run", "-detach", job});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(WaitAllocs("web", 3, "running")) << Allocs("web").dump();
  std::set<std::string> nodes;
  for (const auto& a : Allocs("web"))
    nodes.insert(a["NodeID"].get<std::string>());
  EXPECT_EQ(nodes,
            (std::set<std::string>{cluster_.NodeId(0), cluster_.NodeId(1), cluster_.NodeId(2)}));
  // Each node's own agent serves its allocation's client endpoints.
  for (const auto& a : Allocs("web")) {
    const std::string id = a["ID"];
    codec::Json listing = ClientOf(a).Get("/v1/client/fs/ls/" + id + "?path=/");
    EXPECT_FALSE(listing.empty()) << id;
  }
  // The server sends client calls to the node that runs the allocation.
  for (const auto& a : Allocs("web")) {
    const std::string id = a["ID"];
    auto via_server = cluster_.server().http().Do("GET", "/v1/client/fs/ls/" + id + "?path=/");
    ASSERT_TRUE(via_server.ok()) << via_server.status();
    EXPECT_NE(via_server->body.find("alloc"), std::string::npos) << via_server->body;
    auto stats = cluster_.server().http().Do("GET", "/v1/client/allocation/" + id + "/stats");
    EXPECT_TRUE(stats.ok()) << stats.status();
  }
  auto node_stats =
      cluster_.server().http().Do("GET", "/v1/client/stats?node_id=" + cluster_.NodeId(1));
  ASSERT_TRUE(node_stats.ok()) << node_stats.status();
  EXPECT_NE(node_stats->body.find("\"Memory\""), std::string::npos);
  // The CLI works against a client-only agent as against a server.
  CliResult status = cluster_.client(1).Cli({"job", "status", "web"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("running"), std::string::npos) << status.out;
  CliResult nodes_out = cluster_.client(2).Cli({"node", "status"});
  EXPECT_EQ(nodes_out.exit_code, 0) << nodes_out.err;
  for (const char* name : {"client-0", "client-1", "client-2"})
    EXPECT_NE(nodes_out.out.find(name), std::string::npos) << nodes_out.out;
  CliResult overview = cluster_.client(0).Cli({"status"});
  EXPECT_EQ(overview.exit_code, 0) << overview.err;
  EXPECT_NE(overview.out.find("1 (leader " + cluster_.server().rpc_address() + ")"),
            std::string::npos)
      << overview.out;
  EXPECT_NE(overview.out.find("3 (3 ready, 0 down, 0 ineligible, 0 draining)"), std::string::npos)
      << overview.out;
  EXPECT_NE(overview.out.find("web"), std::string::npos) << overview.out;
  CliResult members = cluster_.client(0).Cli({"server", "members"});
  EXPECT_EQ(members.exit_code, 0) << members.err;
  EXPECT_NE(members.out.find("server.global"), std::string::npos) << members.out;
  EXPECT_NE(members.out.find("alive   true"), std::string::npos) << members.out;
  CliResult job_allocs = cluster_.client(1).Cli({"job", "allocs", "web"});
  EXPECT_EQ(job_allocs.exit_code, 0) << job_allocs.err;
  EXPECT_EQ(std::count(job_allocs.out.begin(), job_allocs.out.end(), '\n'), 4) << job_allocs.out;
  // alloc stop: the scheduler places a replacement.
  const std::string stopped = Allocs("web")[0]["ID"];
  CliResult stop = cluster_.client(0).Cli({"alloc", "stop", "-detach", stopped});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(stop.out.size(), 37u) << stop.out;  // the evaluation's ID
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return cluster_.server().Get("/v1/allocation/" + stopped)["DesiredStatus"] == "stop" &&
               Allocs("web").size() == 4;
      },
      30s))
      << Allocs("web").dump();
  EXPECT_TRUE(WaitAllocs("web", 3, "running")) << Allocs("web").dump();
}

// SIGKILL of the server: the clients keep their tasks running, finish what finishes
// meanwhile, and reconcile when it is back: no task restarts, the batch job's result
// arrives, and new work is placed on them again.
TEST_F(ClusterTest, AKilledServerComesBackToClientsThatKeptTheirTasks) {
  const std::string svc = cluster_.client(0).WriteFile(
      "svc.json",
      RawExecJob(
          "svc", "service", "echo $$ >> \"$NOMAD_ALLOC_DIR/starts\"; sleep 3600",
          R"({"Count": 3, "Constraints": [{"Operand": "distinct_hosts", "RTarget": "true"}]})"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", svc}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("svc", 3, "running")) << Allocs("svc").dump();
  // Runs until the server is gone, and a little longer.
  const std::string bat =
      cluster_.client(0).WriteFile("bat.json", RawExecJob("bat", "batch", "sleep 2; exit 0"));
  ASSERT_EQ(cluster_.server().Cli({"job", "run", "-detach", bat}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("bat", 1, "running")) << Allocs("bat").dump();
  const codec::Json before = Allocs("svc");

  cluster_.server().Kill();
  // The batch task ends while no server answers; the clients keep going.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (size_t i = 0; i < cluster_.clients(); ++i) {
          if (cluster_.client(i).log().find("no server answered") != std::string::npos)
            return true;
        }
        return false;
      },
      30s))
      << cluster_.Logs();
  cluster_.server().Restart();
  ASSERT_TRUE(cluster_.server().ok()) << cluster_.Logs();
  ASSERT_TRUE(cluster_.WaitForReadyNodes(3)) << cluster_.Logs();

  ASSERT_TRUE(WaitAllocs("bat", 1, "complete")) << Allocs("bat").dump();
  ASSERT_TRUE(WaitAllocs("svc", 3, "running")) << Allocs("svc").dump();
  for (const auto& a : before) {
    const std::string id = a["ID"];
    codec::Json now = cluster_.server().Get("/v1/allocation/" + id);
    EXPECT_EQ(now["ClientStatus"], "running") << id;
    EXPECT_EQ(now["TaskStates"]["t"]["Restarts"], 0) << id;
    // One start, ever: the task was never run again.
    auto starts = ClientOf(a).http().Do("GET", "/v1/client/fs/cat/" + id + "?path=alloc/starts");
    ASSERT_TRUE(starts.ok()) << starts.status();
    EXPECT_EQ(std::count(starts->body.begin(), starts->body.end(), '\n'), 1) << starts->body;
  }
  // The clients take new work from the restarted server.
  const std::string more = cluster_.client(1).WriteFile(
      "more.json", RawExecJob("more", "service", "sleep 3600", R"({"Count": 2})"));
  ASSERT_EQ(cluster_.client(1).Cli({"job", "run", "-detach", more}).exit_code, 0);
  EXPECT_TRUE(WaitAllocs("more", 2, "running")) << Allocs("more").dump();
}

// SIGSTOP of a client: its node misses its heartbeats and goes down, its allocation is
// marked lost and replaced on another node. SIGCONT: the node is back, learns that its
// allocation was replaced, and stops it.
TEST_F(ClusterTest, ANodeThatStopsHeartbeatingLosesItsAllocationsToTheOthers) {
  const std::string job = cluster_.client(0).WriteFile(
      "web.json",
      RawExecJob("web", "service", "echo $$ > \"$NOMAD_ALLOC_DIR/pid\"; exec sleep 3600",
                 R"({"Count": 2, "Constraints": [{"Operand": "distinct_hosts", "RTarget": "true"}],
              "EphemeralDisk": {"Sticky": true, "Migrate": true, "SizeMB": 150}})"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", job}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("web", 2, "running")) << Allocs("web").dump();
  const codec::Json victim_alloc = Allocs("web")[0];
  const std::string victim_id = victim_alloc["ID"];
  AgentProcess& victim = ClientOf(victim_alloc);
  const int task_pid = TaskPid(victim, victim_id);
  ASSERT_GT(task_pid, 0);

  ASSERT_EQ(kill(victim.pid(), SIGSTOP), 0);
  const bool lost = testing::WaitFor(
      [&] {
        return cluster_.server().Get("/v1/allocation/" + victim_id)["ClientStatus"] == "lost";
      },
      30s);
  const bool replaced = lost && WaitAllocs("web", 2, "running");
  // Client calls for its allocation, made to the server, say the node is down.
  auto down = cluster_.server().http().Do("GET", "/v1/client/fs/ls/" + victim_id + "?path=/");
  EXPECT_FALSE(down.ok());
  EXPECT_NE(down.status().message().find("is down"), std::string::npos) << down.status();
  ASSERT_EQ(kill(victim.pid(), SIGCONT), 0);
  ASSERT_TRUE(lost) << Allocs("web").dump();
  ASSERT_TRUE(replaced) << Allocs("web").dump();
  // Its task ran on while the agent was stopped (the supervisor holds it)...
  std::set<std::string> running_on;
  for (const auto& a : Allocs("web")) {
    if (a["ClientStatus"] == "running")
      running_on.insert(a["NodeID"].get<std::string>());
  }
  EXPECT_EQ(running_on.size(), 2u);
  EXPECT_FALSE(running_on.contains(victim_alloc["NodeID"].get<std::string>()));
  // The replacement's disk could not come from a node that was down: its task says so.
  bool told = false;
  for (const auto& stub : Allocs("web")) {
    const codec::Json a = cluster_.server().Get("/v1/allocation/" + stub["ID"].get<std::string>());
    if (a.value("PreviousAllocation", "") != victim_id)
      continue;
    for (const auto& ev : a["TaskStates"]["t"]["Events"])
      told |= ev["Type"] == "Ephemeral Disk Not Migrated";
  }
  EXPECT_TRUE(told) << Allocs("web").dump();
  // ...and is stopped once the node hears that its allocation was replaced.
  EXPECT_TRUE(testing::WaitFor([&] { return kill(task_pid, 0) != 0; }, 30s))
      << "task " << task_pid << " still runs";
  EXPECT_TRUE(cluster_.WaitForReadyNodes(3));
  EXPECT_EQ(cluster_.server().Get("/v1/allocation/" + victim_id)["ClientStatus"], "lost");
  // The node's record says what happened to it, as `node status` shows.
  const codec::Json node =
      cluster_.server().Get("/v1/node/" + victim_alloc["NodeID"].get<std::string>());
  std::vector<std::string> events;
  for (const auto& ev : node["Events"])
    events.push_back(ev["Message"]);
  EXPECT_EQ(events, (std::vector<std::string>{"Node registered", "Node heartbeat missed",
                                              "Node reregistered by heartbeat"}))
      << node.dump();
}

// With max_client_disconnect, a node that stops heartbeating is `disconnected`: its
// allocation is `unknown` and replaced elsewhere, and when the node comes back within the
// window the original runs on (the same process) while its replacement is stopped.
TEST_F(ClusterTest, ADisconnectedNodeKeepsItsAllocationWhenItComesBack) {
  const std::string job = cluster_.client(0).WriteFile(
      "web.json",
      RawExecJob("web", "service", "echo $$ > \"$NOMAD_ALLOC_DIR/pid\"; exec sleep 3600",
                 R"({"MaxClientDisconnect": 600000000000})"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", job}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("web", 1, "running")) << Allocs("web").dump();
  const codec::Json original = Allocs("web")[0];
  const std::string original_id = original["ID"];
  AgentProcess& node = ClientOf(original);
  const std::string node_id = original["NodeID"];
  const int task_pid = TaskPid(node, original_id);
  ASSERT_GT(task_pid, 0);

  ASSERT_EQ(kill(node.pid(), SIGSTOP), 0);
  std::string replacement;
  const bool replaced = testing::WaitFor(
      [&] {
        for (const auto& a : Allocs("web")) {
          if (a["ID"] != original_id && a["ClientStatus"] == "running")
            replacement = a["ID"];
        }
        return !replacement.empty();
      },
      30s);
  const codec::Json while_away = cluster_.server().Get("/v1/allocation/" + original_id);
  const codec::Json node_away = cluster_.server().Get("/v1/node/" + node_id);
  ASSERT_EQ(kill(node.pid(), SIGCONT), 0);
  ASSERT_TRUE(replaced) << Allocs("web").dump();
  EXPECT_EQ(while_away["ClientStatus"], "unknown") << while_away.dump();
  EXPECT_EQ(while_away["DesiredStatus"], "run");
  EXPECT_EQ(node_away["Status"], "disconnected");
  EXPECT_EQ(cluster_.server().Get("/v1/allocation/" + replacement)["PreviousAllocation"],
            original_id);

  // Back: the original reports running again and its replacement is stopped.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const codec::Json r = cluster_.server().Get("/v1/allocation/" + replacement);
        return r["DesiredStatus"] == "stop" && r["ClientStatus"] != "running" &&
               cluster_.server().Get("/v1/allocation/" + original_id)["ClientStatus"] == "running";
      },
      30s))
      << Allocs("web").dump();
  EXPECT_EQ(cluster_.server().Get("/v1/allocation/" + replacement)["DesiredDescription"],
            "alloc not needed since the allocation it replaced has reconnected");
  EXPECT_EQ(cluster_.server().Get("/v1/node/" + node_id)["Status"], "ready");
  EXPECT_EQ(kill(task_pid, 0), 0) << "the original task was restarted or stopped";
  EXPECT_EQ(TaskPid(node, original_id), task_pid);
}

// A server relays a followed log from the node that runs the allocation as it grows.
TEST_F(ClusterTest, AServerRelaysAFollowedLogFromTheNode) {
  const std::string job = cluster_.client(0).WriteFile(
      "talk.json", RawExecJob("talk", "service",
                              "echo one; while [ ! -e \"$NOMAD_TASK_DIR/go\" ]; do sleep 0.1; "
                              "done; echo two; exec sleep 3600"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", job}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("talk", 1, "running")) << Allocs("talk").dump();
  const codec::Json alloc = Allocs("talk")[0];
  const std::string id = alloc["ID"];
  AgentProcess& node = ClientOf(alloc);
  std::string seen;
  bool told = false;
  absl::Status s = cluster_.server().http().Stream(
      "/v1/client/fs/logs/" + id + "?task=t&type=stdout&follow=true&plain=true",
      [&](std::string_view data) {
        seen += data;
        if (!told && seen.find("one\n") != std::string::npos) {
          // Only now may the task go on: what follows can only arrive live.
          std::ofstream(node.data_dir() / "alloc" / id / "t" / "local" / "go") << "";
          told = true;
        }
        return seen.find("two\n") == std::string::npos;
      });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, "one\ntwo\n");
  // The node's refusal comes back as it is: a snapshot needs the migrate token.
  auto snap = cluster_.server().http().Do("GET", "/v1/client/allocation/" + id + "/snapshot");
  EXPECT_TRUE(absl::IsPermissionDenied(snap.status())) << snap.status();
  EXPECT_NE(snap.status().message().find("migrate token"), std::string::npos) << snap.status();
}

// A service whose task always fails is replaced by its reschedule policy, with the
// delay doubling each time (5 s, Nomad's least, then 10 s) and preferably on another
// node; each replacement carries the tracker of the ones before it.
TEST_F(ClusterTest, AFailingServiceIsRescheduledWithExponentialDelays) {
  const std::string job =
      cluster_.client(0).WriteFile("flaky.json", RawExecJob("flaky", "service", "exit 1", R"({
        "RestartPolicy": {"Attempts": 0, "Mode": "fail", "Interval": 60000000000,
                          "Delay": 1000000000},
        "ReschedulePolicy": {"Delay": 5000000000, "DelayFunction": "exponential",
                             "MaxDelay": 60000000000, "Unlimited": true}})"));
  CliResult run = cluster_.client(0).Cli({"job", "run", "-detach", job});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  // The third allocation: two replacements.
  codec::Json third;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (const auto& stub : Allocs("flaky")) {
          codec::Json a = cluster_.server().Get("/v1/allocation/" + stub["ID"].get<std::string>());
          if (a["RescheduleTracker"].is_object() && a["RescheduleTracker"]["Events"].size() == 2) {
            third = a;
            return true;
          }
        }
        return false;
      },
      60s))
      << Allocs("flaky").dump();
  const codec::Json& events = third["RescheduleTracker"]["Events"];
  std::vector<int64_t> delays;
  for (const auto& e : events)
    delays.push_back(e["Delay"].get<int64_t>());
  EXPECT_EQ(delays, (std::vector<int64_t>{5'000'000'000, 10'000'000'000}));
  // Each replacement came no sooner than its delay after the one before failed, and the
  // chain is linked both ways.
  EXPECT_EQ(third["PreviousAllocation"], events[1]["PrevAllocID"]);
  for (size_t i = 0; i < events.size(); ++i) {
    codec::Json prev =
        cluster_.server().Get("/v1/allocation/" + events[i]["PrevAllocID"].get<std::string>());
    EXPECT_EQ(prev["ClientStatus"], "failed") << i;
    EXPECT_FALSE(prev["NextAllocation"].get<std::string>().empty()) << i;
    auto failed_at = codec::ParseTime(prev["TaskStates"]["t"]["FinishedAt"].get<std::string>());
    ASSERT_TRUE(failed_at.ok()) << prev.dump();
    EXPECT_GE(events[i]["RescheduleTime"].get<int64_t>(),
              common::ToUnixNanos(*failed_at) + events[i]["Delay"].get<int64_t>())
        << i;
  }
  // Replacements avoid the node where the one before failed while another is free.
  EXPECT_NE(third["NodeID"], events[1]["PrevNodeID"]);
}

// A system job runs one allocation on every node, and on a node that joins later.
TEST_F(ClusterTest, ASystemJobRunsOnEveryNodeIncludingOneThatJoinsLater) {
  const std::string job = cluster_.client(0).WriteFile(
      "sys.json", RawExecJob("sys", "system", "sleep 3600", R"({"ReschedulePolicy": null})"));
  CliResult run = cluster_.client(0).Cli({"job", "run", "-detach", job});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(WaitAllocs("sys", 3, "running")) << Allocs("sys").dump();
  AgentProcess& late = cluster_.AddClient();
  ASSERT_TRUE(late.ok()) << cluster_.Logs();
  ASSERT_TRUE(WaitAllocs("sys", 4, "running")) << Allocs("sys").dump();
  std::set<std::string> nodes;
  for (const auto& a : Allocs("sys"))
    nodes.insert(a["NodeID"].get<std::string>());
  EXPECT_EQ(nodes.size(), 4u);
  EXPECT_TRUE(nodes.contains(cluster_.NodeId(3)));
}

// An ineligible node gets no new work and gives up its system allocation; eligible
// again, it gets it back. Bad input changes nothing.
TEST_F(ClusterTest, EligibilityDecidesWhatANodeIsGiven) {
  const std::string sys = cluster_.client(0).WriteFile(
      "sys.json", RawExecJob("sys", "system", "sleep 3600", R"({"ReschedulePolicy": null})"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", sys}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("sys", 3, "running")) << Allocs("sys").dump();
  const std::string node = cluster_.NodeId(2);

  CliResult off = cluster_.client(0).Cli({"node", "eligibility", "-disable", node.substr(0, 8)});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(off.out,
            "Node \"" + node + "\" scheduling eligibility set: ineligible for scheduling\n");
  EXPECT_EQ(cluster_.server().Get("/v1/node/" + node)["SchedulingEligibility"], "ineligible");
  ASSERT_TRUE(WaitAllocs("sys", 2, "running")) << Allocs("sys").dump();
  for (const auto& a : Allocs("sys")) {
    if (a["NodeID"] == node) {
      EXPECT_EQ(a["DesiredStatus"], "stop");
    }
  }
  const std::string web = cluster_.client(0).WriteFile(
      "web.json", RawExecJob("web", "service", "sleep 3600",
                             R"({"Count": 3, "Constraints": [{"Operand": "distinct_hosts",
                                 "RTarget": "true"}]})"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", web}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("web", 2, "running")) << Allocs("web").dump();
  for (const auto& a : Allocs("web"))
    EXPECT_NE(a["NodeID"], node);

  // Bad input: a value that is neither, a node that does not exist.
  auto bad = cluster_.server().http().Do("PUT", "/v1/node/" + node + "/eligibility",
                                         R"({"Eligibility": "maybe"})");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  auto unknown = cluster_.server().http().Do("PUT", "/v1/node/no-such-node/eligibility",
                                             R"({"Eligibility": "eligible"})");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  EXPECT_EQ(cluster_.server().Get("/v1/node/" + node)["SchedulingEligibility"], "ineligible");

  CliResult on = cluster_.client(2).Cli({"node", "eligibility", "-enable", "-self"});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_TRUE(WaitAllocs("sys", 3, "running")) << Allocs("sys").dump();
  EXPECT_TRUE(WaitAllocs("web", 3, "running")) << Allocs("web").dump();
}

// A drain moves a service off its node one allocation at a time (migrate
// max_parallel = 1): each replacement runs, healthy, before the next moves, so at no
// moment is more than one of the three missing. The drain then completes, the node
// stays ineligible, and the CLI's monitor says so.
TEST_F(ClusterTest, ADrainMovesAServiceOneAllocationAtATime) {
  const std::string node = cluster_.NodeId(0);
  // Only node 0 is eligible while the job is placed: all three land there.
  ASSERT_NO_FATAL_FAILURE(SetEligibility({1, 2}, "-disable"));
  const std::string job = cluster_.client(0).WriteFile(
      "web.json", RawExecJob("web", "service", "sleep 3600", R"({"Count": 3,
        "Migrate": {"MaxParallel": 1, "HealthCheck": "task_states",
                    "MinHealthyTime": 1000000000, "HealthyDeadline": 60000000000}})"));
  ASSERT_EQ(cluster_.client(0).Cli({"job", "run", "-detach", job}).exit_code, 0);
  ASSERT_TRUE(WaitAllocs("web", 3, "running")) << Allocs("web").dump();
  for (const auto& a : Allocs("web"))
    ASSERT_EQ(a["NodeID"], node);
  ASSERT_NO_FATAL_FAILURE(SetEligibility({1, 2}, "-enable"));

  CliResult drain = cluster_.client(1).Cli(
      {"node", "drain", "-enable", "-yes", "-detach", "-deadline", "5m", node.substr(0, 8)});
  ASSERT_EQ(drain.exit_code, 0) << drain.out << drain.err;
  EXPECT_NE(drain.out.find("Node \"" + node + "\" drain strategy set"), std::string::npos)
      << drain.out;
  // Sampled at every poll until the drain is done.
  size_t fewest_running = 3;
  const bool done = testing::WaitFor(
      [&] {
        size_t running = 0;
        for (const auto& a : Allocs("web"))
          running += a["DesiredStatus"] == "run" && a["ClientStatus"] == "running" ? 1 : 0;
        fewest_running = std::min(fewest_running, running);
        return cluster_.server().Get("/v1/node/" + node)["Drain"] == false;
      },
      90s);
  ASSERT_TRUE(done) << Allocs("web").dump();
  EXPECT_GE(fewest_running, 2u) << "more than one allocation was missing at once";
  ASSERT_TRUE(WaitAllocs("web", 3, "running")) << Allocs("web").dump();
  for (const auto& a : Allocs("web")) {
    if (a["DesiredStatus"] == "run") {
      EXPECT_NE(a["NodeID"], node);
    }
  }
  const codec::Json n = cluster_.server().Get("/v1/node/" + node);
  EXPECT_EQ(n["SchedulingEligibility"], "ineligible");
  EXPECT_TRUE(n["DrainStrategy"].is_null());
  EXPECT_EQ(n["LastDrain"]["Status"], "complete");

  CliResult monitor = cluster_.client(2).Cli({"node", "drain", "-monitor", node});
  EXPECT_EQ(monitor.exit_code, 0) << monitor.err;
  EXPECT_NE(monitor.out.find("Drain complete for node"), std::string::npos) << monitor.out;
  EXPECT_NE(monitor.out.find("All allocations on node \"" + node + "\" have stopped"),
            std::string::npos)
      << monitor.out;
  CliResult overview = cluster_.client(0).Cli({"status"});
  EXPECT_NE(overview.out.find("3 (3 ready, 0 down, 1 ineligible, 0 draining)"), std::string::npos)
      << overview.out;
  // Bad input: a drain of a node that does not exist changes nothing.
  auto unknown = cluster_.server().http().Do("PUT", "/v1/node/no-such-node/drain",
                                             R"({"DrainSpec": {"Deadline": 0}})");
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  CliResult off = cluster_.client(0).Cli({"node", "drain", "-disable", "-yes", node});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(cluster_.server().Get("/v1/node/" + node)["SchedulingEligibility"], "eligible");
}

// A drained node's allocation moves with its ephemeral disk (`sticky` and `migrate`):
// the replacement on another node starts with the data the first one wrote, pulled
// from the old node with the token the server gave.
TEST_F(ClusterTest, AStickyDiskMovesToAnotherNode) {
  const std::string node = cluster_.NodeId(0);
  ASSERT_NO_FATAL_FAILURE(SetEligibility({1, 2}, "-disable"));
  const std::string job = cluster_.client(0).WriteFile(
      "db.json",
      RawExecJob(
          "db", "service",
          "L=\"$NOMAD_TASK_DIR/first\"; test -f \"$L\" || echo \"$NOMAD_ALLOC_ID\" > \"$L\"; "
          "echo run >> \"$NOMAD_ALLOC_DIR/data/runs\"; exec sleep 3600",
          R"({"EphemeralDisk": {"Sticky": true, "Migrate": true, "SizeMB": 150}})"));
  CliResult run = cluster_.client(0).Cli({"job", "run", "-detach", job});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(WaitAllocs("db", 1, "running")) << Allocs("db").dump();
  const std::string first = Allocs("db")[0]["ID"];
  ASSERT_EQ(Allocs("db")[0]["NodeID"], node);
  ASSERT_NO_FATAL_FAILURE(SetEligibility({1, 2}, "-enable"));

  ASSERT_EQ(cluster_.client(1).Cli({"node", "drain", "-enable", "-yes", "-detach", node}).exit_code,
            0);
  std::string second;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (const auto& a : Allocs("db")) {
          if (a["ID"] != first && a["ClientStatus"] == "running")
            second = a["ID"];
        }
        return !second.empty();
      },
      60s))
      << Allocs("db").dump();
  const codec::Json moved = cluster_.server().Get("/v1/allocation/" + second);
  EXPECT_NE(moved["NodeID"], node);
  EXPECT_EQ(moved["PreviousAllocation"], first);
  // Read through the server, which forwards to the new node.
  auto cat = [&](const std::string& path) {
    auto r = cluster_.server().http().Do("GET", "/v1/client/fs/cat/" + second + "?path=" + path);
    return r.ok() ? r->body : r.status().ToString();
  };
  EXPECT_EQ(cat("t/local/first"), first + "\n");
  EXPECT_EQ(cat("alloc/data/runs"), "run\nrun\n");
  for (const auto& ev : moved["TaskStates"]["t"]["Events"])
    EXPECT_NE(ev["Type"], "Ephemeral Disk Not Migrated") << ev.dump();
}

}  // namespace
}  // namespace drover::cluster
