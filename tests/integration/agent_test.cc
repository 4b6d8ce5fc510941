// End-to-end: a real `drover agent -dev` process, raw_exec tasks as real processes,
// driven through the HTTP API and the `drover` CLI as a user would.
#include <signal.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_fixture.h"

namespace drover::integration {
namespace {

using namespace std::chrono_literals;  // NOLINT

TEST_F(AgentTest, BatchJobRunsToCompleteWithExitCodeZero) {
  const std::string file = agent_.WriteFile("batch.json", RawExecJob("b1", "batch", "echo hi"));
  CliResult run = agent_.Cli({"job", "run", file});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("Monitoring evaluation"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("finished with status \"complete\""), std::string::npos) << run.out;
  codec::Json alloc = WaitAlloc("b1", "complete");
  const codec::Json& events = alloc["TaskStates"]["t"]["Events"];
  bool terminated_zero = false;
  for (const auto& e : events) {
    if (e["Type"] == "Terminated")
      terminated_zero = e["Details"]["exit_code"] == "0";
  }
  EXPECT_TRUE(terminated_zero) << events.dump();
  EXPECT_EQ(alloc["TaskStates"]["t"]["State"], "dead");
  EXPECT_EQ(alloc["TaskStates"]["t"]["Failed"], false);
  // The task's stdout went to the alloc's log dir.
  const std::string id = alloc["ID"];
  EXPECT_TRUE(testing::WaitFor([&] {
    return testing::ReadFile(agent_.data_dir() / "alloc" / id / "alloc" / "logs" / "t.stdout.0") ==
           "hi\n";
  }));
  EXPECT_TRUE(testing::WaitFor([&] { return agent_.Get("/v1/job/b1")["Status"] == "dead"; }));
  CliResult status = agent_.Cli({"job", "status", "b1"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("dead"), std::string::npos) << status.out;
}

// A purged job's evaluations and allocations stay until the servers' garbage
// collection takes them; `drover system gc` runs it now, and the client forgets them
// too (their directories go).
TEST_F(AgentTest, SystemGcCollectsAPurgedJobEverywhere) {
  const std::string file = agent_.WriteFile("gc.json", RawExecJob("gc1", "batch", "true"));
  CliResult run = agent_.Cli({"job", "run", file});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string id = WaitAlloc("gc1", "complete")["ID"];
  CliResult stop = agent_.Cli({"job", "stop", "-purge", "gc1"});
  ASSERT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  EXPECT_EQ(agent_.Get("/v1/allocations").size(), 1u) << "nothing goes before the collection";
  CliResult gc = agent_.Cli({"system", "gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.out << gc.err;
  EXPECT_EQ(gc.out, "");
  EXPECT_TRUE(agent_.Get("/v1/allocations").empty());
  EXPECT_TRUE(agent_.Get("/v1/evaluations").empty());
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return !std::filesystem::exists(agent_.data_dir() / "alloc" / id) &&
               agent_.Get("/v1/agent/self")["stats"]["client"]["num_allocations"] == "0";
      },
      30s))
      << agent_.Get("/v1/agent/self")["stats"]["client"].dump();
}

TEST_F(AgentTest, ServiceJobRunsAndStopCompletesWithKillEvents) {
  const std::string file = agent_.WriteFile(
      "svc.json",
      RawExecJob("svc", "service", "echo $$ > \"$NOMAD_ALLOC_DIR/pid\"; exec sleep 600"));
  CliResult run = agent_.Cli({"job", "run", file});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  codec::Json alloc = WaitAlloc("svc", "running");
  const std::string id = alloc["ID"];
  const auto pid_file = agent_.data_dir() / "alloc" / id / "alloc" / "pid";
  ASSERT_TRUE(testing::WaitFor([&] { return !testing::ReadFile(pid_file).empty(); }));
  const int pid = std::stoi(testing::ReadFile(pid_file));
  EXPECT_EQ(kill(pid, 0), 0);
  EXPECT_EQ(agent_.Get("/v1/job/svc")["Status"], "running");
  CliResult status = agent_.Cli({"job", "status", "svc"});
  EXPECT_NE(status.out.find("running"), std::string::npos) << status.out;

  CliResult stop = agent_.Cli({"job", "stop", "svc"});
  EXPECT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  alloc = WaitAlloc("svc", "complete");
  const auto types = EventTypes(alloc);
  EXPECT_NE(std::find(types.begin(), types.end(), "Killing"), types.end());
  EXPECT_EQ(types.back(), "Killed");
  EXPECT_TRUE(testing::WaitFor([&] { return kill(pid, 0) != 0; }));
  EXPECT_EQ(alloc["DesiredStatus"], "stop");
}

TEST_F(AgentTest, MissingCommandFailsAllocWithReasonInAllocStatus) {
  codec::Json job = *codec::ParseJson(RawExecJob("broken", "service", ""));
  job["Job"]["TaskGroups"][0]["Tasks"][0]["Config"] = {{"command", "/no/such/binary"}};
  const std::string file = agent_.WriteFile("broken.json", codec::Dump(job));
  CliResult run = agent_.Cli({"job", "run", file});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  codec::Json alloc = WaitAlloc("broken", "failed");
  const auto types = EventTypes(alloc);
  EXPECT_NE(std::find(types.begin(), types.end(), "Driver Failure"), types.end());
  EXPECT_EQ(types.back(), "Not Restarting");
  CliResult status = agent_.Cli({"alloc", "status", alloc["ID"].get<std::string>().substr(0, 8)});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("failed"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("Driver Failure"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("No such file or directory"), std::string::npos) << status.out;
}

TEST_F(AgentTest, BadInputGetsClearErrorsAndAgentKeepsServing) {
  auto put = [&](const std::string& path, const std::string& body) {
    return agent_.http().Do("PUT", path, body).status();
  };
  absl::Status s = put("/v1/jobs", "{not json");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("400"), std::string::npos) << s;
  s = put("/v1/jobs", R"({"Nope": {}})");
  EXPECT_NE(s.message().find("Job must be specified"), std::string::npos) << s;
  s = put("/v1/job/other", RawExecJob("mine", "batch", "true"));
  EXPECT_NE(s.message().find("Job ID does not match name"), std::string::npos) << s;
  s = put("/v1/jobs",
          R"({"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t"}]}]}})");
  EXPECT_NE(s.message().find("500"), std::string::npos) << s;
  EXPECT_NE(s.message().find("Missing task driver"), std::string::npos) << s;

  // A driver no node has (docker, whose config is checked): accepted, but nothing can
  // place it; `job run` says why, exit 2.
  codec::Json docker = *codec::ParseJson(RawExecJob("dock", "service", "true"));
  docker["Job"]["TaskGroups"][0]["Tasks"][0]["Driver"] = "docker";
  docker["Job"]["TaskGroups"][0]["Tasks"][0]["Config"] = {{"image", "busybox:1"}};
  CliResult run = agent_.Cli({"job", "run", agent_.WriteFile("dock.json", codec::Dump(docker))});
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_NE(run.out.find("missing drivers"), std::string::npos) << run.out;

  // A constraint no node meets.
  codec::Json win = *codec::ParseJson(RawExecJob("win", "service", "true"));
  win["Job"]["Constraints"] = {
      {{"LTarget", "${attr.kernel.name}"}, {"RTarget", "windows"}, {"Operand", "="}}};
  run = agent_.Cli({"job", "run", agent_.WriteFile("win.json", codec::Dump(win))});
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_NE(run.out.find("${attr.kernel.name} = windows"), std::string::npos) << run.out;

  // A static port that another allocation already holds.
  const std::string net =
      R"({"Networks": [{"ReservedPorts": [{"Label": "http", "Value": 29999}]}]})";
  run =
      agent_.Cli({"job", "run", "-detach",
                  agent_.WriteFile("p1.json", RawExecJob("p1", "service", "exec sleep 600", net))});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  run =
      agent_.Cli({"job", "run",
                  agent_.WriteFile("p2.json", RawExecJob("p2", "service", "exec sleep 600", net))});
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_NE(run.out.find("reserved port collision http=29999"), std::string::npos) << run.out;

  // Unknown objects.
  CliResult status = agent_.Cli({"job", "status", "no-such-job"});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_NE(status.err.find("No job(s) with prefix or id \"no-such-job\" found"), std::string::npos)
      << status.err;
  status = agent_.Cli({"alloc", "status", "ffffffff"});
  EXPECT_EQ(status.exit_code, 1);

  // Still serving.
  EXPECT_EQ(agent_.Get("/v1/agent/health")["server"]["ok"], true);
}

TEST_F(AgentTest, BlockingQueryOverHttpWakesOnChange) {
  auto first = agent_.http().Do("GET", "/v1/jobs");
  ASSERT_TRUE(first.ok());
  const uint64_t index = first->index;
  ASSERT_GT(index, 0u);
  // Whether the write lands before or during the blocking read, the read must answer
  // with a newer index (the unit tests check that it really waits).
  std::thread writer([&] {
    auto r = cli::NewHttpClient(*cli::ParseAddress("http://" + agent_.address()))
                 ->Do("PUT", "/v1/jobs", RawExecJob("late", "batch", "true"));
    EXPECT_TRUE(r.ok()) << r.status();
  });
  const auto start = std::chrono::steady_clock::now();
  auto blocked = agent_.http().Do("GET", "/v1/jobs?index=" + std::to_string(index) + "&wait=30s");
  writer.join();
  ASSERT_TRUE(blocked.ok()) << blocked.status();
  EXPECT_GT(blocked->index, index);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_EQ(blocked->headers.at("x-nomad-knownleader"), "true");
}

TEST(AgentStartupTest, PortAlreadyTakenFailsWithClearError) {
  AgentProcess first;
  ASSERT_TRUE(first.ok()) << first.log();
  const std::string port = first.address().substr(first.address().rfind(':') + 1);
  testing::TempDir dir;
  CliResult second = RunProcess({testing::BinaryPath("drover").string(), "agent", "-dev",
                                 "-http-port", port, "-data-dir", dir.path().string()},
                                {});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("Address already in use"), std::string::npos) << second.err;
}

}  // namespace
}  // namespace drover::integration

namespace drover::integration {
namespace {

TEST_F(AgentTest, LifecycleTasksRunInOrderAndWriteIntoTheSharedAllocDir) {
  auto task = [](const std::string& name, const std::string& hook, const std::string& script) {
    codec::Json t = {{"Name", name},
                     {"Driver", "raw_exec"},
                     {"Config", {{"command", "/bin/sh"}, {"args", {"-c", script}}}},
                     {"Resources", {{"CPU", 50}, {"MemoryMB", 16}}}};
    if (!hook.empty())
      t["Lifecycle"] = {{"Hook", hook}, {"Sidecar", false}};
    return t;
  };
  const std::string append = "echo $NOMAD_TASK_NAME >> \"$NOMAD_ALLOC_DIR/order\"";
  codec::Json job = {{"Job",
                      {{"ID", "lifecycle"},
                       {"Type", "batch"},
                       {"Datacenters", {"dc1"}},
                       {"TaskGroups",
                        {{{"Name", "g"},
                          {"Tasks",
                           {task("cleanup", "poststop", append), task("main", "", append),
                            task("setup", "prestart", append)}}}}}}}};
  CliResult run = agent_.Cli({"job", "run", agent_.WriteFile("lc.json", codec::Dump(job))});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  codec::Json alloc = WaitAlloc("lifecycle", "complete");
  const std::string id = alloc["ID"];
  EXPECT_EQ(testing::ReadFile(agent_.data_dir() / "alloc" / id / "alloc" / "order"),
            "setup\nmain\ncleanup\n");
}

}  // namespace
}  // namespace drover::integration

namespace drover::integration {
namespace {

TEST_F(AgentTest, RestartAndSignalThroughTheClientApi) {
  const std::string file =
      agent_.WriteFile("r.json", RawExecJob("restartme", "service",
                                            "trap 'echo got-hup >> \"$NOMAD_ALLOC_DIR/hup\"' HUP; "
                                            "while true; do sleep 0.1; done"));
  ASSERT_EQ(agent_.Cli({"job", "run", file}).exit_code, 0);
  codec::Json alloc = WaitAlloc("restartme", "running");
  const std::string id = alloc["ID"];
  auto put = [&](const std::string& path, const std::string& body) {
    return agent_.http().Do("PUT", path, body).status();
  };
  EXPECT_TRUE(put("/v1/client/allocation/" + id + "/restart", R"({"TaskName": "t"})").ok());
  ASSERT_TRUE(testing::WaitFor([&] {
    codec::Json a = agent_.Get("/v1/allocation/" + id);
    return a["TaskStates"]["t"]["Restarts"] == 1 && a["TaskStates"]["t"]["State"] == "running";
  }));
  EXPECT_TRUE(
      put("/v1/client/allocation/" + id + "/signal", R"({"Task": "t", "Signal": "SIGHUP"})").ok());
  EXPECT_TRUE(testing::WaitFor([&] {
    return testing::ReadFile(agent_.data_dir() / "alloc" / id / "alloc" / "hup") == "got-hup\n";
  }));
  absl::Status s = put("/v1/client/allocation/" + id + "/signal", R"({"Signal": "SIGNOPE"})");
  EXPECT_NE(s.message().find("400"), std::string::npos) << s;
  s = put("/v1/client/allocation/ffffffff-0000-4000-8000-000000000000/restart", "{}");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("Unknown allocation"), std::string::npos) << s;
  s = put("/v1/client/allocation/" + id + "/restart", R"({"TaskName": "nope"})");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
}

}  // namespace
}  // namespace drover::integration
