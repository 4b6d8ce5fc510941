// The node supervisor seen from a real agent: tasks outlive a killed supervisor, and
// exec tasks run isolated.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
};

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
  // Orphaned by the killed supervisor, the task is this (subreaper) process's child now:
  // reap it, or it lingers as a zombie.
  EXPECT_TRUE(testing::WaitFor([&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return kill(task, 0) != 0;
  }));
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
