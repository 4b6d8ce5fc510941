// The node supervisor seen from a real agent: tasks outlive a killed supervisor, exits
// that happen while no supervisor (and no agent) runs keep their codes, one reaper per
// node whatever crashes, the kernel's OOM killer picks tasks first, and exec tasks run
// isolated.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "supervisor/cgroups.h"
#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

class NodeSupervisorTest : public AgentTest {
 protected:
  int ReadInt(const fs::path& p) {
    const std::string s = testing::ReadFile(p);
    return s.empty() ? 0 : std::stoi(s);
  }
  fs::path SupervisorPidFile() {
    return agent_.data_dir() / "supervisor" / "state" / "supervisor.pid";
  }
  fs::path ReaperPidFile() { return agent_.data_dir() / "supervisor" / "state" / "reaper.pid"; }
  static std::string OomScoreAdj(int pid) {
    std::string s = testing::ReadFile("/proc/" + std::to_string(pid) + "/oom_score_adj");
    return s.empty() ? s : s.substr(0, s.size() - 1);
  }
  // Every live drover-reaper working for this test's agent (its command line names
  // the agent's data dir).
  std::vector<int> Reapers() {
    std::vector<int> out;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string pid = entry.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos)
        continue;
      if (testing::ReadFile(entry.path() / "comm") == "drover-reaper\n" &&
          testing::ReadFile(entry.path() / "cmdline").find(agent_.data_dir().string()) !=
              std::string::npos)
        out.push_back(std::stoi(pid));
    }
    return out;
  }
  // Whether this process may lower an oom_score_adj below 0 (CAP_SYS_RESOURCE; root in
  // a container may lack it).
  static bool MayLowerOomScore() {
    const std::string status = testing::ReadFile("/proc/self/status");
    const size_t at = status.find("CapEff:");
    return at != std::string::npos &&
           (std::stoull(status.substr(at + 7), nullptr, 16) >> 24 & 1) != 0;  // CAP_SYS_RESOURCE
  }
  // The pid the task wrote to its local/pid (the fixture's job writes it).
  int TaskPid(const std::string& alloc_id) {
    const fs::path pid_file = agent_.data_dir() / "alloc" / alloc_id / "t" / "local" / "pid";
    EXPECT_TRUE(testing::WaitFor([&] { return ReadInt(pid_file) > 0; }));
    return ReadInt(pid_file);
  }
  // Reaps what this (subreaper) test process inherited; whether `pid` is gone.
  static bool Gone(int pid) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return kill(pid, 0) != 0;
  }
};

// A batch task ends while neither the agent nor any supervisor runs: the reaper wrote
// its exit down, and the next supervisor reports it with its real code. Before the
// reaper this was "exit status unknown", a failure, and the restart policy ran the task
// a second time.
TEST_F(NodeSupervisorTest, AnExitWhileNoSupervisorRunsKeepsItsCodeAndIsNotRunAgain) {
  const fs::path go = agent_.data_dir() / "go";
  const std::string file = agent_.WriteFile(
      "b.json",
      RawExecJob("once", "batch",
                 "echo $$ > \"$NOMAD_TASK_DIR/pid\"; echo ran >> \"$NOMAD_ALLOC_DIR/runs\"; "
                 "while [ ! -e " +
                     go.string() + " ]; do sleep 0.02; done; exit 0",
                 R"({"RestartPolicy": {"Attempts": 2, "Delay": 1000000000,
                               "Interval": 60000000000, "Mode": "fail"}})"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const std::string id = WaitAlloc("once", "running")["ID"];
  const int task = TaskPid(id);
  const int supervisor = ReadInt(SupervisorPidFile());
  ASSERT_GT(supervisor, 0);

  agent_.Kill();
  kill(supervisor, SIGKILL);
  // The reaper starts a crashed supervisor again after a second (or when an agent
  // asks): the task ends in that gap, with neither supervisor nor agent to see it.
  ASSERT_TRUE(testing::WaitFor([&] { return Gone(supervisor); }));
  std::ofstream(go.string()) << "go";
  ASSERT_TRUE(testing::WaitFor([&] { return Gone(task); }));
  agent_.Restart();
  ASSERT_TRUE(agent_.ok()) << agent_.log();

  const codec::Json alloc = WaitAlloc("once", "complete");
  const codec::Json& state = alloc["TaskStates"]["t"];
  EXPECT_EQ(state["Restarts"], 0) << state.dump();
  EXPECT_FALSE(state["Failed"].get<bool>()) << state.dump();
  int terminated = 0;
  for (const auto& e : state["Events"]) {
    if (e["Type"] != "Terminated")
      continue;
    ++terminated;
    EXPECT_EQ(e["ExitCode"], 0) << e.dump();
    EXPECT_EQ(e.value("DisplayMessage", "").find("unknown"), std::string::npos) << e.dump();
  }
  EXPECT_EQ(terminated, 1) << state.dump();
  EXPECT_EQ(testing::ReadFile(agent_.data_dir() / "alloc" / id / "alloc" / "runs"), "ran\n");
}

// Killing supervisors (with and without the agent) never leaves a second reaper: the
// one the node has starts a new supervisor, and the tasks stay its children.
TEST_F(NodeSupervisorTest, OneReaperPerNodeWhateverCrashes) {
  const std::string file = agent_.WriteFile(
      "s.json", RawExecJob("svc", "service",
                           "echo $$ > \"$NOMAD_TASK_DIR/pid\"; while true; do sleep 0.1; done"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const std::string id = WaitAlloc("svc", "running")["ID"];
  const int task = TaskPid(id);
  const int reaper = ReadInt(ReaperPidFile());
  ASSERT_GT(reaper, 0);
  EXPECT_EQ(Reapers(), std::vector<int>{reaper});

  for (int round = 0; round < 3; ++round) {
    const int supervisor = ReadInt(SupervisorPidFile());
    if (round == 1)
      agent_.Kill();
    kill(supervisor, SIGKILL);
    if (round == 1)
      agent_.Restart();
    ASSERT_TRUE(testing::WaitFor([&] {
      const int now = ReadInt(SupervisorPidFile());
      return now != 0 && now != supervisor && kill(now, 0) == 0;
    })) << "round "
        << round;
    EXPECT_EQ(Reapers(), std::vector<int>{reaper}) << "round " << round;
  }
  EXPECT_EQ(kill(task, 0), 0);
  codec::Json alloc = agent_.Get("/v1/allocation/" + id);
  EXPECT_EQ(alloc["ClientStatus"], "running");
  EXPECT_EQ(alloc["TaskStates"]["t"]["Restarts"], 0);
  ASSERT_EQ(agent_.Cli({"job", "stop", "-detach", "svc"}).exit_code, 0);
  WaitAlloc("svc", "complete");
  EXPECT_TRUE(testing::WaitFor([&] { return Gone(task); }));
}

TEST_F(NodeSupervisorTest, TasksOutliveAKilledSupervisorAndStopStillWorks) {
  const std::string file = agent_.WriteFile(
      "s.json", RawExecJob("keep", "service",
                           "echo $$ > \"$NOMAD_TASK_DIR/pid\"; while true; do sleep 0.1; done"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const std::string id = WaitAlloc("keep", "running")["ID"];
  const fs::path pid_file = agent_.data_dir() / "alloc" / id / "t" / "local" / "pid";
  ASSERT_TRUE(testing::WaitFor([&] { return ReadInt(pid_file) > 0; }));
  const int task = ReadInt(pid_file);
  const int first = ReadInt(SupervisorPidFile());
  ASSERT_GT(first, 0);

  kill(first, SIGKILL);
  // The agent notices, starts another supervisor, and that one adopts the task.
  ASSERT_TRUE(testing::WaitFor([&] {
    const int now = ReadInt(SupervisorPidFile());
    return now != 0 && now != first;
  }));
  EXPECT_EQ(kill(task, 0), 0) << "the task died with its supervisor";
  codec::Json alloc = agent_.Get("/v1/allocation/" + id);
  EXPECT_EQ(alloc["ClientStatus"], "running");
  EXPECT_EQ(alloc["TaskStates"]["t"]["Restarts"], 0);

  ASSERT_EQ(agent_.Cli({"job", "stop", "-detach", "keep"}).exit_code, 0);
  WaitAlloc("keep", "complete");
  EXPECT_TRUE(testing::WaitFor([&] { return Gone(task); }));
}

// When memory runs out the kernel kills a task before the agent, and the supervisor and
// reaper last. The agent here inherits 300 from this process (so that what each sets is
// visible); without CAP_SYS_RESOURCE nothing may go below 0, and they keep 300, but a
// task still sets its own back to 0.
TEST_F(NodeSupervisorTest, TheOomKillerPicksTasksFirst) {
  agent_.Kill();
  for (const int pid : {ReadInt(ReaperPidFile()), ReadInt(SupervisorPidFile())})
    kill(pid, SIGKILL);
  std::ofstream("/proc/self/oom_score_adj") << "300";
  agent_.Restart();
  std::ofstream("/proc/self/oom_score_adj") << "0";
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  const std::string file = agent_.WriteFile(
      "s.json", RawExecJob("oom", "service",
                           "echo $$ > \"$NOMAD_TASK_DIR/pid\"; while true; do sleep 0.1; done"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const int task = TaskPid(WaitAlloc("oom", "running")["ID"]);
  const bool may_lower = MayLowerOomScore();
  EXPECT_EQ(OomScoreAdj(ReadInt(ReaperPidFile())), may_lower ? "-1000" : "300");
  EXPECT_EQ(OomScoreAdj(ReadInt(SupervisorPidFile())), may_lower ? "-1000" : "300");
  EXPECT_EQ(OomScoreAdj(agent_.pid()), may_lower ? "-500" : "300");
  EXPECT_EQ(OomScoreAdj(task), "0");
  if (!may_lower) {  // said, not silently ignored
    EXPECT_NE(testing::ReadFile(agent_.data_dir() / "supervisor" / "supervisor.log")
                  .find("oom_score_adj"),
              std::string::npos);
  }
}

TEST_F(NodeSupervisorTest, ROOT_CGROUPS_AnExecJobRunsIsolated) {
  if (geteuid() != 0 || supervisor::CgroupLayout::Detect().mode == supervisor::CgroupMode::kNone) {
    GTEST_SKIP() << "exec needs root and cgroups";
  }
  codec::Json job =
      codec::ParseJson(RawExecJob("boxed", "batch",
                                  "id -u > \"$NOMAD_TASK_DIR/uid\"; echo $$ > /local/pid; echo "
                                  "\"$NOMAD_TASK_DIR\" > /local/dir; "
                                  "ls / > /local/root"))
          .value();
  job["Job"]["TaskGroups"][0]["Tasks"][0]["Driver"] = "exec";
  const std::string file = agent_.WriteFile("e.json", codec::Dump(job));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const codec::Json alloc = WaitAlloc("boxed", "complete");
  const fs::path local =
      agent_.data_dir() / "alloc" / alloc["ID"].get<std::string>() / "t" / "local";
  EXPECT_EQ(testing::ReadFile(local / "uid"), "65534\n");
  EXPECT_EQ(testing::ReadFile(local / "pid"), "1\n");
  EXPECT_EQ(testing::ReadFile(local / "dir"), "/local\n");
  EXPECT_EQ(testing::ReadFile(local / "root").find("home\n"), std::string::npos);
  const codec::Json node = agent_.Get("/v1/node/" + alloc["NodeID"].get<std::string>());
  EXPECT_TRUE(node["Drivers"]["exec"]["Healthy"].get<bool>()) << node["Drivers"].dump();
}

TEST_F(NodeSupervisorTest, ROOT_CGROUPS_AnExecTaskOverItsMemoryIsOomKilledAndTheEventSaysSo) {
  if (geteuid() != 0 || supervisor::CgroupLayout::Detect().mode == supervisor::CgroupMode::kNone) {
    GTEST_SKIP() << "exec needs root and cgroups";
  }
  // The shell holds 200 MB in a variable; the task has 32 MB.
  codec::Json job =
      codec::ParseJson(RawExecJob("hog", "batch",
                                  "a=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#a}",
                                  R"({"RestartPolicy": {"Attempts": 0, "Delay": 1000000000,
                                            "Interval": 300000000000, "Mode": "fail"}})"))
          .value();
  job["Job"]["TaskGroups"][0]["Tasks"][0]["Driver"] = "exec";
  const std::string file = agent_.WriteFile("h.json", codec::Dump(job));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  const codec::Json alloc = WaitAlloc("hog", "failed");
  bool oom = false;
  for (const auto& e : alloc["TaskStates"]["t"]["Events"]) {
    if (e["Type"] == "Terminated")
      oom = oom || e["Details"].value("oom_killed", "") == "true";
  }
  EXPECT_TRUE(oom) << alloc["TaskStates"]["t"]["Events"].dump();
  CliResult status = agent_.Cli({"alloc", "status", alloc["ID"]});
  EXPECT_NE(status.out.find("Exit Message: \"OOM Killed\""), std::string::npos) << status.out;
}

}  // namespace
}  // namespace drover::integration
