// End-to-end runner behaviour with real processes (raw_exec): leader semantics, the
// restart policy, lifecycle ordering and ephemeral-disk migration across a job update.
#include <signal.h>

#include <gtest/gtest.h>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

codec::Json ShTask(const std::string& name, const std::string& script) {
  return {{"Name", name},
          {"Driver", "raw_exec"},
          {"KillTimeout", 2'000'000'000},
          {"Config", {{"command", "/bin/sh"}, {"args", {"-c", script}}}},
          {"Resources", {{"CPU", 50}, {"MemoryMB", 16}}}};
}

std::string JobWithTasks(const std::string& id, const std::string& type, codec::Json tasks) {
  return codec::Dump(codec::Json{{"Job",
                                  {{"ID", id},
                                   {"Type", type},
                                   {"Datacenters", {"dc1"}},
                                   {"TaskGroups", {{{"Name", "g"}, {"Tasks", tasks}}}}}}});
}

int Count(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<int>(std::count(v.begin(), v.end(), s));
}

// A batch leader that exits successfully is dead (no restart), which kills the rest.
TEST_F(AgentTest, LeaderExitKillsItsLongRunningSibling) {
  codec::Json leader = ShTask("leader", "sleep 0.3");
  leader["Leader"] = true;
  codec::Json sibling = ShTask("sibling", "echo $$ > \"$NOMAD_ALLOC_DIR/pid\"; exec sleep 600");
  const std::string file = agent_.WriteFile(
      "leader.json", JobWithTasks("leader", "batch", codec::Json::array({leader, sibling})));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  codec::Json alloc = WaitAlloc("leader", "complete");
  const auto types = EventTypes(alloc, "sibling");
  EXPECT_EQ(Count(types, "Leader Task Dead"), 1) << alloc.dump();
  EXPECT_EQ(Count(types, "Killing"), 1);
  EXPECT_EQ(types.back(), "Killed");
  EXPECT_EQ(alloc["TaskStates"]["sibling"]["Failed"], false);
  const std::string id = alloc["ID"];
  const int pid = std::stoi(testing::ReadFile(agent_.data_dir() / "alloc" / id / "alloc" / "pid"));
  EXPECT_TRUE(testing::WaitFor([&] { return kill(pid, 0) != 0; }));
}

TEST_F(AgentTest, FailingTaskRestartsExactlyTwiceThenFails) {
  const std::string file = agent_.WriteFile(
      "fail.json", RawExecJob("flaky", "service", "exit 1",
                              R"({"RestartPolicy": {"Attempts": 2, "Delay": 1000000000,
                                       "Interval": 300000000000, "Mode": "fail"}})"));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  codec::Json alloc = WaitAlloc("flaky", "failed");
  const auto types = EventTypes(alloc);
  EXPECT_EQ(alloc["TaskStates"]["t"]["Restarts"], 2) << alloc.dump();
  EXPECT_EQ(Count(types, "Started"), 3);
  EXPECT_EQ(Count(types, "Restarting"), 2);
  EXPECT_EQ(types.back(), "Not Restarting");
  EXPECT_EQ(alloc["TaskStates"]["t"]["Failed"], true);
  // Each restart waited the policy's delay (up to 25 % jitter on top).
  const auto& events = alloc["TaskStates"]["t"]["Events"];
  std::vector<int64_t> started;
  for (const auto& e : events) {
    if (e["Type"] == "Started")
      started.push_back(e["Time"].get<int64_t>());
  }
  ASSERT_EQ(started.size(), 3u);
  EXPECT_GE(started[1] - started[0], 1'000'000'000);
  EXPECT_GE(started[2] - started[1], 1'000'000'000);
}

TEST_F(AgentTest, PrestartPoststartPoststopOrderInTheSharedAllocDir) {
  const std::string append = "echo $NOMAD_TASK_NAME >> \"$NOMAD_ALLOC_DIR/order\"";
  codec::Json setup = ShTask("setup", append);
  setup["Lifecycle"] = {{"Hook", "prestart"}, {"Sidecar", false}};
  // main waits (bounded) for the poststart task, so "main" is written before it and
  // main is still running when it starts.
  codec::Json main = ShTask("main", append +
                                        "; i=0; while [ ! -f \"$NOMAD_ALLOC_DIR/poststarted\" ] && "
                                        "[ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done");
  codec::Json after = ShTask("after", append + "; touch \"$NOMAD_ALLOC_DIR/poststarted\"");
  after["Lifecycle"] = {{"Hook", "poststart"}, {"Sidecar", false}};
  codec::Json cleanup = ShTask("cleanup", append);
  cleanup["Lifecycle"] = {{"Hook", "poststop"}, {"Sidecar", false}};
  const std::string file = agent_.WriteFile(
      "order.json",
      JobWithTasks("order", "batch", codec::Json::array({cleanup, after, main, setup})));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", file}).exit_code, 0);
  codec::Json alloc = WaitAlloc("order", "complete");
  const std::string id = alloc["ID"];
  EXPECT_EQ(testing::ReadFile(agent_.data_dir() / "alloc" / id / "alloc" / "order"),
            "setup\nmain\nafter\ncleanup\n");
}

// With `ephemeral_disk { migrate = true }`, what a task wrote into alloc/data is in the
// replacement allocation after a destructive job update.
TEST_F(AgentTest, MigratedDataSurvivesAJobUpdate) {
  const std::string script =
      "[ -f \"$NOMAD_ALLOC_DIR/data/owner\" ] || echo $NOMAD_ALLOC_ID > "
      "\"$NOMAD_ALLOC_DIR/data/owner\"; exec sleep 600";
  const std::string disk = R"({"EphemeralDisk": {"Migrate": true, "SizeMB": 300}})";
  const std::string v1 = agent_.WriteFile("m1.json", RawExecJob("mig", "service", script, disk));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", v1}).exit_code, 0);
  codec::Json first = WaitAlloc("mig", "running");
  const std::string first_id = first["ID"];
  const auto owner = [&](const std::string& alloc_id) {
    return testing::ReadFile(agent_.data_dir() / "alloc" / alloc_id / "alloc" / "data" / "owner");
  };
  ASSERT_TRUE(testing::WaitFor([&] { return owner(first_id) == first_id + "\n"; }));

  // A changed command line is a destructive update: a new alloc replaces the old one.
  const std::string v2 =
      agent_.WriteFile("m2.json", RawExecJob("mig", "service", script + " # v2", disk));
  ASSERT_EQ(agent_.Cli({"job", "run", "-detach", v2}).exit_code, 0);
  std::string second_id;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        for (const auto& a : agent_.Get("/v1/job/mig/allocations")) {
          if (a["ID"] != first_id && a["ClientStatus"] == "running") {
            second_id = a["ID"];
            return true;
          }
        }
        return false;
      },
      30s));
  codec::Json second = agent_.Get("/v1/allocation/" + second_id);
  EXPECT_EQ(second["PreviousAllocation"], first_id);
  EXPECT_EQ(owner(second_id), first_id + "\n");
  EXPECT_EQ(agent_.Get("/v1/allocation/" + first_id)["ClientStatus"], "complete");

  // The snapshot a remote replacement would pull holds the data, as a tar archive, and
  // only for the migrate token the servers derive from this node's secret.
  auto refused = agent_.http().Do("GET", "/v1/client/allocation/" + second_id + "/snapshot");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << refused.status();
  auto snap = agent_.GetSnapshot(second_id);
  ASSERT_TRUE(snap.ok()) << snap.status();
  const std::string tar = agent_.WriteFile("snap.tar", snap->body);
  const std::filesystem::path out = agent_.data_dir() / "snap-out";
  std::filesystem::create_directories(out);
  CliResult untar = RunProcess({"/bin/tar", "-C", out.string(), "-xf", tar}, {});
  ASSERT_EQ(untar.exit_code, 0) << untar.err;
  EXPECT_EQ(testing::ReadFile(out / "alloc" / "data" / "owner"), first_id + "\n");
}

TEST_F(AgentTest, GarbageCollectingAnAllocRemovesItsDirectory) {
  ASSERT_EQ(agent_
                .Cli({"job", "run", "-detach",
                      agent_.WriteFile("gc1.json", RawExecJob("gc1", "batch", "true"))})
                .exit_code,
            0);
  ASSERT_EQ(agent_
                .Cli({"job", "run", "-detach",
                      agent_.WriteFile("gc2.json", RawExecJob("gc2", "service", "sleep 600"))})
                .exit_code,
            0);
  const std::string done = WaitAlloc("gc1", "complete")["ID"];
  const std::string running = WaitAlloc("gc2", "running")["ID"];
  const auto dir = [&](const std::string& id) { return agent_.data_dir() / "alloc" / id; };
  ASSERT_TRUE(std::filesystem::exists(dir(done)));
  auto put = [&](const std::string& path) { return agent_.http().Do("PUT", path).status(); };
  absl::Status s = put("/v1/client/allocation/" + running + "/gc");
  EXPECT_NE(s.message().find("not terminal"), std::string::npos) << s;
  EXPECT_TRUE(std::filesystem::exists(dir(running)));
  s = put("/v1/client/allocation/ffffffff-0000-4000-8000-000000000000/gc");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(put("/v1/client/allocation/" + done + "/gc").ok());
  EXPECT_FALSE(std::filesystem::exists(dir(done)));
  // Collected, not forgotten: the server still lists it and it is not run again.
  EXPECT_EQ(agent_.Get("/v1/allocation/" + done)["ClientStatus"], "complete");
  EXPECT_TRUE(put("/v1/client/gc").ok());
  EXPECT_TRUE(std::filesystem::exists(dir(running)));
}

TEST_F(AgentTest, TaskLogsAreRotatedIntoTheAllocLogDir) {
  // 3 files of 1 MB at most: writing 3.5 MB keeps the newest three.
  const std::string script =
      "i=0; while [ $i -lt 35 ]; do head -c 102400 /dev/zero | tr '\\0' x; i=$((i+1)); done";
  std::string job = RawExecJob("logs", "batch", script);
  auto parsed = codec::ParseJson(job);
  (*parsed)["Job"]["TaskGroups"][0]["Tasks"][0]["LogConfig"] = {{"MaxFiles", 3},
                                                                {"MaxFileSizeMB", 1}};
  ASSERT_EQ(
      agent_.Cli({"job", "run", "-detach", agent_.WriteFile("logs.json", codec::Dump(*parsed))})
          .exit_code,
      0);
  codec::Json alloc = WaitAlloc("logs", "complete");
  const auto logs = agent_.data_dir() / "alloc" / alloc["ID"].get<std::string>() / "alloc" / "logs";
  EXPECT_FALSE(std::filesystem::exists(logs / "t.stdout.0"));
  EXPECT_EQ(std::filesystem::file_size(logs / "t.stdout.1"), 1u << 20);
  EXPECT_EQ(std::filesystem::file_size(logs / "t.stdout.2"), 1u << 20);
  EXPECT_EQ(std::filesystem::file_size(logs / "t.stdout.3"), 35u * 102400 - 3 * (1u << 20));
}

}  // namespace
}  // namespace drover::integration
