// 200 simulated nodes (drover-nodesim) against one real server, through the real
// client protocol: they register, heartbeat, and report the allocations placed on them.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cluster/cluster.h"
#include "tests/integration/agent_fixture.h"

extern char** environ;

namespace drover::cluster {
namespace {

using namespace std::chrono_literals;  // NOLINT
using integration::RawExecJob;

constexpr int kNodes = 200;

// drover-nodesim as a child process, stopped at the end of the test.
class NodeSim {
 public:
  // `extra`: more flags (-name-prefix, -fail-percent). `dir` holds its ready file and
  // stderr, so each simulator needs its own.
  NodeSim(const std::string& servers, int nodes, const std::filesystem::path& dir,
          const std::vector<std::string>& extra = {}) {
    std::filesystem::create_directories(dir);
    ready_ = dir / "nodesim.ready";
    std::vector<std::string> args = {testing::BinaryPath("drover-nodesim").string(),
                                     "-servers",
                                     servers,
                                     "-nodes",
                                     std::to_string(nodes),
                                     "-batch-run-ms",
                                     "200",
                                     "-ready-file",
                                     ready_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, (dir / "nodesim.err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
  }
  ~NodeSim() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool WaitReady() const {
    return testing::WaitFor([&] { return std::filesystem::exists(ready_); }, 60s);
  }

 private:
  pid_t pid_ = -1;
  std::filesystem::path ready_;
};

TEST(NodeSimTest, TwoHundredSimulatedNodesRunWhatTheServerPlaces) {
  // Every simulated node calls from 127.0.0.1: the per-client connection limit must
  // hold a long poll and a heartbeat for each.
  Cluster cluster(ClusterOptions{.clients = 0,
                                 .server_config = "limits {\n  rpc_max_conns_per_client = 0\n}\n"});
  ASSERT_TRUE(cluster.ok()) << cluster.Logs();
  NodeSim sim(cluster.server().rpc_address(), kNodes, cluster.server().data_dir());
  ASSERT_TRUE(sim.WaitReady()) << testing::ReadFile(cluster.server().data_dir() / "nodesim.err");
  ASSERT_TRUE(cluster.WaitForReadyNodes(kNodes, 60s)) << cluster.Logs();

  // One allocation on each node.
  const std::string svc = cluster.server().WriteFile(
      "svc.json",
      RawExecJob(
          "svc", "service", "sleep 3600",
          R"({"Count": 200, "Constraints": [{"Operand": "distinct_hosts", "RTarget": "true"}]})"));
  CliResult run = cluster.server().Cli({"job", "run", "-detach", svc});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto count = [&](const std::string& job, const std::string& status) {
    size_t n = 0;
    for (const auto& a : cluster.server().Get("/v1/job/" + job + "/allocations"))
      n += a["ClientStatus"] == status ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(testing::WaitFor([&] { return count("svc", "running") == 200; }, 60s))
      << count("svc", "running") << " running";
  std::set<std::string> nodes;
  for (const auto& a : cluster.server().Get("/v1/job/svc/allocations"))
    nodes.insert(a["NodeID"].get<std::string>());
  EXPECT_EQ(nodes.size(), 200u);
  // Batch work is reported complete.
  const std::string bat = cluster.server().WriteFile(
      "bat.json", RawExecJob("bat", "batch", "true", R"({"Count": 50})"));
  ASSERT_EQ(cluster.server().Cli({"job", "run", "-detach", bat}).exit_code, 0);
  EXPECT_TRUE(testing::WaitFor([&] { return count("bat", "complete") == 50; }, 60s))
      << count("bat", "complete") << " complete";

  // A share of nodes whose allocations fail: each failed allocation is rescheduled by
  // its policy (one attempt) to another node, where it fails again, and no more.
  const std::filesystem::path bad_dir = cluster.server().data_dir() / "bad-sim";
  NodeSim bad(cluster.server().rpc_address(), 20, bad_dir,
              {"-name-prefix", "bad", "-fail-percent", "100"});
  ASSERT_TRUE(bad.WaitReady()) << testing::ReadFile(bad_dir / "nodesim.err");
  ASSERT_TRUE(cluster.WaitForReadyNodes(kNodes + 20, 60s)) << cluster.Logs();
  const std::string flaky =
      cluster.server().WriteFile("flaky.json", RawExecJob("flaky", "batch", "true", R"({"Count": 5,
        "Constraints": [{"LTarget": "${node.unique.name}", "Operand": "regexp",
                         "RTarget": "^bad-"}],
        "ReschedulePolicy": {"Attempts": 1, "Interval": 3600000000000, "Delay": 5000000000,
                             "DelayFunction": "constant", "Unlimited": false}})"));
  CliResult flaky_run = cluster.server().Cli({"job", "run", "-detach", flaky});
  ASSERT_EQ(flaky_run.exit_code, 0) << flaky_run.out << flaky_run.err;
  ASSERT_TRUE(testing::WaitFor([&] { return count("flaky", "failed") == 10; }, 60s))
      << cluster.server().Get("/v1/job/flaky/allocations").dump();
  size_t replacements = 0;
  for (const auto& stub : cluster.server().Get("/v1/job/flaky/allocations")) {
    const codec::Json a = cluster.server().Get("/v1/allocation/" + stub["ID"].get<std::string>());
    if (a.value("PreviousAllocation", "").empty())
      continue;
    ++replacements;
    const codec::Json prev =
        cluster.server().Get("/v1/allocation/" + a["PreviousAllocation"].get<std::string>());
    EXPECT_NE(a["NodeID"], prev["NodeID"]) << "a replacement prefers another node";
    EXPECT_EQ(a["RescheduleTracker"]["Events"].size(), 1u);
  }
  EXPECT_EQ(replacements, 5u);
  EXPECT_EQ(count("flaky", "failed"), 10u);  // the attempt is spent: nothing more
}

}  // namespace
}  // namespace drover::cluster
