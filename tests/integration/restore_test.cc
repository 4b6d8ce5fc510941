// Agent restarts on the same data dir (docs/state.md): a SIGKILLed agent comes back
// with the same jobs and allocations, re-attaches the service task that kept running
// (same pid, no restart) and reports the batch task that finished meanwhile with its
// real exit code; a gracefully stopped (non-dev) agent leaves its tasks running.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "supervisor/cgroups.h"
#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

namespace fs = std::filesystem;

int ReadInt(const fs::path& p) {
  const std::string s = testing::ReadFile(p);
  return s.empty() ? 0 : std::atoi(s.c_str());
}

int CountEvents(codec::Json task_state, const std::string& type) {
  int n = 0;
  for (const auto& e : task_state["Events"])
    n += e["Type"] == type ? 1 : 0;
  return n;
}

std::set<std::string> AllocIds(AgentProcess& agent) {
  std::set<std::string> ids;
  for (const auto& a : agent.Get("/v1/allocations"))
    ids.insert(a["ID"].get<std::string>());
  return ids;
}

class RestoreTest : public AgentTest {
 protected:
  codec::Json Alloc(const std::string& id) { return agent_.Get("/v1/allocation/" + id); }
};

TEST_F(RestoreTest, AKilledAgentReattachesItsTasksAndSeesWhatFinishedMeanwhile) {
  const std::string svc = agent_.WriteFile(
      "svc.json", RawExecJob("svc", "service",
                             "echo $$ > \"$NOMAD_TASK_DIR/pid\"; while true; do sleep 0.1; done"));
  // The batch task finishes only once the test says so: while the agent is down.
  const std::string bat = agent_.WriteFile(
      "bat.json", RawExecJob("bat", "batch",
                             "echo $$ > \"$NOMAD_TASK_DIR/pid\"; "
                             "while [ ! -e \"$NOMAD_TASK_DIR/go\" ]; do sleep 0.05; done; exit 0"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", svc}).exit_code, 0);
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", bat}).exit_code, 0);
  const std::string svc_id = WaitAlloc("svc", "running")["ID"];
  const std::string bat_id = WaitAlloc("bat", "running")["ID"];
  const fs::path svc_dir = agent_.data_dir() / "alloc" / svc_id / "t" / "local";
  const fs::path bat_dir = agent_.data_dir() / "alloc" / bat_id / "t" / "local";
  ASSERT_TRUE(testing::WaitFor([&] { return ReadInt(svc_dir / "pid") > 0; }));
  ASSERT_TRUE(testing::WaitFor([&] { return ReadInt(bat_dir / "pid") > 0; }));
  const int svc_pid = ReadInt(svc_dir / "pid");
  const int bat_pid = ReadInt(bat_dir / "pid");
  const std::set<std::string> allocs_before = AllocIds(agent_);
  codec::Json jobs_before = agent_.Get("/v1/jobs");

  agent_.Kill();
  std::ofstream(bat_dir / "go").put('\n');
  // Its supervisor reaps it; nobody tells the (dead) agent.
  ASSERT_TRUE(testing::WaitFor([&] { return kill(bat_pid, 0) != 0; }));
  ASSERT_EQ(kill(svc_pid, 0), 0) << "the service task died with the agent";

  agent_.Restart();
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  EXPECT_EQ(AllocIds(agent_), allocs_before);
  codec::Json jobs_after = agent_.Get("/v1/jobs");
  ASSERT_EQ(jobs_after.size(), jobs_before.size());
  for (size_t i = 0; i < jobs_after.size(); ++i) {
    EXPECT_EQ(jobs_after[i]["ID"], jobs_before[i]["ID"]);
    EXPECT_EQ(jobs_after[i]["JobModifyIndex"], jobs_before[i]["JobModifyIndex"]);
    EXPECT_EQ(jobs_after[i]["CreateIndex"], jobs_before[i]["CreateIndex"]);
  }

  // The batch task's exit, which happened while the agent was away, with its code.
  codec::Json done = WaitAlloc("bat", "complete");
  EXPECT_EQ(done["ID"], bat_id);
  codec::Json bt = done["TaskStates"]["t"];
  EXPECT_EQ(bt["State"], "dead");
  EXPECT_EQ(bt["Failed"], false) << done.dump();
  EXPECT_EQ(CountEvents(bt, "Started"), 1);
  ASSERT_EQ(CountEvents(bt, "Terminated"), 1) << bt.dump();
  for (const auto& e : bt["Events"]) {
    if (e["Type"] == "Terminated") {
      EXPECT_EQ(e["ExitCode"], 0) << e.dump();
    }
  }

  // The service task: the same process, re-attached, never restarted.
  codec::Json running = Alloc(svc_id);
  EXPECT_EQ(running["ClientStatus"], "running");
  codec::Json st = running["TaskStates"]["t"];
  EXPECT_EQ(st["State"], "running");
  EXPECT_EQ(st["Restarts"], 0);
  EXPECT_EQ(CountEvents(st, "Started"), 1) << st.dump();
  EXPECT_EQ(ReadInt(svc_dir / "pid"), svc_pid);
  EXPECT_EQ(kill(svc_pid, 0), 0);

  // And it is still under control: a stop kills it.
  ASSERT_EQ(agent_.Cli({"job", "stop", "-detach", "svc"}).exit_code, 0);
  WaitAlloc("svc", "complete");
  EXPECT_TRUE(testing::WaitFor([&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return kill(svc_pid, 0) != 0;
  }));
}

TEST_F(RestoreTest, ADamagedStateDbStopsTheAgentUnlessToldToMoveItAside) {
  const std::string svc = agent_.WriteFile(
      "svc.json",
      RawExecJob("svc", "service", "echo $$ > \"$NOMAD_TASK_DIR/pid\"; exec sleep 1000"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", svc}).exit_code, 0);
  const std::string first = WaitAlloc("svc", "running")["ID"];
  const fs::path pid_file = agent_.data_dir() / "alloc" / first / "t" / "local" / "pid";
  ASSERT_TRUE(testing::WaitFor([&] { return ReadInt(pid_file) > 0; }));
  const int old_task = ReadInt(pid_file);
  agent_.Kill();
  const fs::path db = agent_.data_dir() / "client" / "state.db";
  const std::string whole = testing::ReadFile(db);
  std::ofstream(db, std::ios::trunc | std::ios::binary) << whole.substr(0, whole.size() / 2);

  agent_.Restart();
  EXPECT_FALSE(agent_.ok());
  EXPECT_EQ(agent_.exit_status(), 1);
  EXPECT_NE(agent_.log().find("Error starting agent: DATA_LOSS: state DB " + db.string() +
                              " is truncated"),
            std::string::npos)
      << agent_.log();
  EXPECT_NE(agent_.log().find("-reset-corrupt-state"), std::string::npos);
  EXPECT_EQ(testing::ReadFile(db).size(), whole.size() / 2) << "the damaged file was touched";

  agent_.Restart({"-reset-corrupt-state"});
  ASSERT_TRUE(agent_.ok()) << agent_.log();
  bool moved = false;
  for (const auto& e : fs::directory_iterator(db.parent_path()))
    moved |= e.path().filename().string().rfind("state.db.corrupt-", 0) == 0;
  EXPECT_TRUE(moved);
  // The server still knows the job: its allocation runs again on the fresh client DB
  // (a new task writes its pid), and the task the lost DB recorded is not left running
  // beside it.
  EXPECT_TRUE(testing::WaitFor([&] {
    const int now = ReadInt(pid_file);
    return now > 0 && now != old_task;
  })) << agent_.log();
  EXPECT_TRUE(testing::WaitFor([&] { return Alloc(first)["ClientStatus"] == "running"; }));
  EXPECT_TRUE(testing::WaitFor([&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return kill(old_task, 0) != 0;
  })) << agent_.log();
  EXPECT_NE(agent_.log().find("killed 1 tasks that no allocation owns"), std::string::npos)
      << agent_.log();
}

// A production (non-dev) agent stopped with SIGTERM leaves its tasks running; the next
// one re-attaches them. Only exec runs outside -dev, hence root and cgroups.
TEST(RestoreNonDevTest, ROOT_CGROUPS_AGracefullyStoppedAgentLeavesTasksRunning) {
  if (geteuid() != 0 || supervisor::CgroupLayout::Detect().mode == supervisor::CgroupMode::kNone) {
    GTEST_SKIP() << "exec needs root and cgroups";
  }
  AgentProcess agent({}, AgentProcess::Role::kServerAndClient);
  ASSERT_TRUE(agent.ok()) << agent.log();
  // The task's pid is 1 in its namespace: it proves it lives on by counting.
  codec::Json job = codec::ParseJson(RawExecJob("count", "service",
                                                "i=0; while true; do i=$((i+1)); "
                                                "echo $i > /local/n.tmp; mv /local/n.tmp "
                                                "/local/n; sleep 0.05; done"))
                        .value();
  job["Job"]["TaskGroups"][0]["Tasks"][0]["Driver"] = "exec";
  ASSERT_EQ(
      agent.Cli({"job", "run", "-detach", agent.WriteFile("c.json", codec::Dump(job))}).exit_code,
      0)
      << agent.log();
  std::string id;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        codec::Json allocs = agent.Get("/v1/job/count/allocations");
        if (allocs.empty() || allocs[0]["ClientStatus"] != "running")
          return false;
        id = allocs[0]["ID"];
        return true;
      },
      30s))
      << agent.log();
  const fs::path n = agent.data_dir() / "alloc" / id / "t" / "local" / "n";
  ASSERT_TRUE(testing::WaitFor([&] { return ReadInt(n) > 0; }));

  EXPECT_EQ(agent.Stop(), 0);
  const int at_stop = ReadInt(n);
  EXPECT_TRUE(testing::WaitFor([&] { return ReadInt(n) > at_stop + 5; }))
      << "the task stopped with the agent";

  agent.Restart();
  ASSERT_TRUE(agent.ok()) << agent.log();
  const int at_start = ReadInt(n);
  codec::Json alloc = agent.Get("/v1/allocation/" + id);
  EXPECT_EQ(alloc["ClientStatus"], "running") << agent.log();
  EXPECT_EQ(alloc["TaskStates"]["t"]["Restarts"], 0);
  EXPECT_EQ(CountEvents(alloc["TaskStates"]["t"], "Started"), 1);
  // Counting on from where it was: the same process, not a fresh start.
  EXPECT_TRUE(testing::WaitFor([&] { return ReadInt(n) > at_start + 5; }));
  EXPECT_GE(at_start, at_stop);

  ASSERT_EQ(agent.Cli({"job", "stop", "-detach", "count"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitFor(
      [&] { return agent.Get("/v1/allocation/" + id)["ClientStatus"] == "complete"; }, 30s));
}

}  // namespace
}  // namespace drover::integration
