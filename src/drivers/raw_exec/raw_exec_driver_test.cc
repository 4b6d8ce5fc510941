// raw_exec through a real drover-supervisor, started by the SupervisorLink as the
// agent starts it.
#include "drivers/raw_exec/raw_exec_driver.h"

#include <filesystem>

#include "drivers/supervised/supervised_driver_fixture.h"

namespace drover::drivers {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT

class RawExecDriverTest : public SupervisedDriverTest {
 protected:
  void SetUp() override {
    SupervisedDriverTest::SetUp();
    Connect();
  }
  void Connect() {
    SupervisedDriverTest::Connect([this](SupervisorLink& link) {
      return std::make_unique<RawExecDriver>(io_.get_executor(), clock_, link);
    });
  }

  TaskConfig Config(const std::string& id, std::vector<std::string> args) {
    TaskConfig c;
    c.id = id;
    c.task_dir = dir_.path().string();
    c.logs = {.dir = logs_.string(), .stdout_base = id + ".stdout", .stderr_base = id + ".stderr"};
    c.env = {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hello"}};
    model::Value::Array a;
    for (auto& s : args)
      a.push_back(model::Value(s));
    c.config = model::Value::Object{{"command", Helper()}, {"args", a}};
    return c;
  }
  TaskConfig Shell(const std::string& id, const std::string& script) {
    TaskConfig c = Config(id, {});
    c.config =
        model::Value::Object{{"command", "/bin/sh"}, {"args", model::Value::Array{"-c", script}}};
    return c;
  }
};

TEST_F(RawExecDriverTest, ItsStartsShareTheSupervisorLinksSlots) {
  // The supervisor answers one spawn at a time: every driver on the link (raw_exec,
  // exec) takes its start slots from the link, so a burst is bounded node-wide.
  ASSERT_NE(driver_->start_slots(), nullptr);
  EXPECT_EQ(driver_->start_slots(), &link_->start_slots());
  EXPECT_EQ(driver_->start_slots()->available(), SupervisorLink::kStartSlots);
}

TEST_F(RawExecDriverTest, RunsCommandWithEnvAndCapturesExitCodeAndOutput) {
  auto h = Start(Shell("t1", "echo $GREETING; echo oops >&2; exit 3"));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GT(h->pid, 0);
  EXPECT_GT(h->proc_start_ticks, 0u);
  EXPECT_EQ(h->driver, "raw_exec");
  auto r = Run(driver_->WaitTask("t1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->Successful());
  // The output is in the files by the time the exit is known.
  EXPECT_EQ(testing::ReadFile(logs_ / "t1.stdout.0"), "hello\n");
  EXPECT_EQ(testing::ReadFile(logs_ / "t1.stderr.0"), "oops\n");
  auto st = driver_->InspectTask("t1");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskRunState::kExited);
  EXPECT_TRUE(driver_->DestroyTask("t1", false).ok());
  EXPECT_TRUE(absl::IsNotFound(driver_->InspectTask("t1").status()));
  // The supervisor forgets it once the exit is acknowledged.
  EXPECT_TRUE(RunUntil([&] { return link_->Find("t1") == nullptr; }));
}

TEST_F(RawExecDriverTest, BadCommandsAreUnrecoverableStartErrors) {
  TaskConfig c = Config("t2", {});
  c.config = model::Value::Object{{"command", "/definitely/not/here"}};
  auto h = Start(c);
  ASSERT_FALSE(h.ok());
  EXPECT_FALSE(IsRecoverable(h.status()));
  EXPECT_NE(h.status().message().find("No such file or directory"), std::string::npos)
      << h.status();
  c.config = model::Value::Object{{"command", "no-such-binary-anywhere"}};
  h = Start(c);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("not found in PATH"), std::string::npos) << h.status();
  c.config = model::Value::Object{};
  h = Start(c);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("command"), std::string::npos);
  c.config = model::Value::Object{{"command", "/bin/true"}, {"args", "not a list"}};
  h = Start(c);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("list of strings"), std::string::npos);
}

TEST_F(RawExecDriverTest, StopSignalsTheWholeProcessGroup) {
  const fs::path gc = dir_.path() / "gc";
  const fs::path ready = dir_.path() / "ready";
  auto h = Start(Config("t3", {"grandchild", gc.string(), "ready", ready.string(), "pause"}));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0 && ReadPid(gc) > 0; }));
  const int grandchild = ReadPid(gc);
  ASSERT_TRUE(Run(driver_->StopTask("t3", 5s, "SIGTERM")).ok());
  auto r = Run(driver_->WaitTask("t3"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_EQ(r->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(testing::WaitFor([&] {
    Reap();
    return !Alive(grandchild);
  }));
}

TEST_F(RawExecDriverTest, CancelOnExitCancelsTheScopeWhenTheTaskDies) {
  const fs::path ready = dir_.path() / "ready";
  auto h = Start(Config("t9", {"ready", ready.string(), "pause"}));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0; }));
  auto scope = common::CancellationScope::Create(io_.get_executor());
  ASSERT_TRUE(driver_->CancelOnExit("t9", scope));
  io_.poll();
  EXPECT_FALSE(scope->cancelled());
  ASSERT_EQ(kill(h->pid, SIGTERM), 0);  // an exit the driver did not cause
  ASSERT_TRUE(RunUntil([&] { return scope->cancelled(); }));
  auto r = Run(driver_->WaitTask("t9"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGTERM);
  auto unknown = common::CancellationScope::Create(io_.get_executor());
  ASSERT_TRUE(driver_->CancelOnExit("nope", unknown));
  EXPECT_TRUE(unknown->cancelled());
}

TEST_F(RawExecDriverTest, StopKillsAfterTheTimeoutWhenTheSignalIsIgnored) {
  const fs::path ready = dir_.path() / "ready";
  auto h = Start(Config("t4", {"ignore-term", "ready", ready.string(), "pause"}));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0; }));
  ASSERT_TRUE(Run(driver_->StopTask("t4", 200ms, "SIGINT")).ok());
  auto r = Run(driver_->WaitTask("t4"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGKILL);
}

TEST_F(RawExecDriverTest, DestroyKillsWhatTheTaskLeftBehind) {
  const fs::path gc = dir_.path() / "gc";
  auto h = Start(Config("t5", {"grandchild", gc.string(), "exit", "0"}));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(Run(driver_->WaitTask("t5")).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(gc) > 0; }));
  const int grandchild = ReadPid(gc);
  EXPECT_TRUE(Alive(grandchild));
  ASSERT_TRUE(driver_->DestroyTask("t5", false).ok());
  EXPECT_TRUE(RunUntil([&] {
    Reap();
    return !Alive(grandchild) && link_->Find("t5") == nullptr;
  }));
}

TEST_F(RawExecDriverTest, ARestartedAgentReattachesAndGetsTheRealExitCode) {
  const fs::path ready = dir_.path() / "ready";
  auto h = Start(Config("t6", {"ready", ready.string(), "wait-usr1", "exit", "7"}));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0; }));
  // The agent goes away; the task does not notice, and exits while nobody listens.
  link_->Close();
  Connect();
  kill(h->pid, SIGUSR1);
  // The new agent's link learns of the exit from the supervisor.
  ASSERT_TRUE(RunUntil([&] {
    const auto* info = link_->Find("t6");
    return info != nullptr && !info->running;
  }));
  TaskHandle wrong = *h;
  wrong.proc_start_ticks += 1;
  EXPECT_TRUE(absl::IsNotFound(driver_->RecoverTask(wrong)));
  ASSERT_TRUE(driver_->RecoverTask(*h).ok());
  auto r = Run(driver_->WaitTask("t6"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 7);  // seen by the supervisor, not lost with the agent
  EXPECT_EQ(driver_->InspectTask("t6")->state, TaskRunState::kExited);
}

// The agent died after the supervisor started a task but before it recorded the handle:
// the next agent's driver finds the task by its allocation and task (the id's prefix),
// and adopts it with its real exit instead of starting it again.
TEST_F(RawExecDriverTest, AStartTheAgentNeverRecordedIsFoundAndAdopted) {
  const fs::path ready = dir_.path() / "ready";
  TaskConfig c = Config("a1/web/0123abcd", {"ready", ready.string(), "wait-usr1", "exit", "4"});
  c.logs.stdout_base = "web.stdout";  // as a task runner names them
  c.logs.stderr_base = "web.stderr";
  auto h = Start(c);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0; }));
  link_->Close();
  Connect();
  EXPECT_FALSE(driver_->FindUnrecorded("a1/db/"));
  const std::optional<TaskHandle> found = driver_->FindUnrecorded("a1/web/");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->task_id, "a1/web/0123abcd");
  EXPECT_EQ(found->pid, h->pid);
  EXPECT_EQ(found->proc_start_ticks, h->proc_start_ticks);
  ASSERT_TRUE(driver_->RecoverTask(*found).ok());
  EXPECT_FALSE(driver_->FindUnrecorded("a1/web/"));  // adopted now: nobody else's
  kill(h->pid, SIGUSR1);
  auto r = Run(driver_->WaitTask("a1/web/0123abcd"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 4);
}

TEST_F(RawExecDriverTest, TasksNoAllocationOwnsAreReapedAfterARestart) {
  const fs::path ready_a = dir_.path() / "ready-a";
  const fs::path ready_b = dir_.path() / "ready-b";
  auto kept = Start(Config("kept", {"ready", ready_a.string(), "pause"}));
  auto lost = Start(Config("lost", {"ready", ready_b.string(), "pause"}));
  auto exited = Start(Config("exited", {"exit", "3"}));
  ASSERT_TRUE(kept.ok() && lost.ok() && exited.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready_a) > 0 && ReadPid(ready_b) > 0; }));
  ASSERT_TRUE(RunUntil([&] {
    const auto* info = link_->Find("exited");
    return info != nullptr && !info->running;
  }));
  // A new agent re-attaches only what its state DB knows.
  link_->Close();
  Connect();
  ASSERT_TRUE(driver_->RecoverTask(*kept).ok());
  std::vector<SupervisedDriver*> drivers = {driver_.get()};
  EXPECT_EQ(Run(ReapUnownedTasks(*link_, drivers)), 2);
  EXPECT_TRUE(testing::WaitFor([&] {
    Reap();
    return !Alive(lost->pid);
  }));
  // Both are gone from the supervisor (killed or acknowledged); the owned one runs on.
  EXPECT_TRUE(
      RunUntil([&] { return link_->Find("lost") == nullptr && link_->Find("exited") == nullptr; }));
  EXPECT_TRUE(Alive(kept->pid));
  EXPECT_EQ(link_->TaskIds(), std::vector<std::string>{"kept"});
}

TEST_F(RawExecDriverTest, AKilledSupervisorIsReplacedAndTheTaskLivesOnWithItsLogs) {
  const fs::path ready = dir_.path() / "ready";
  auto h = Start(Config("t7", {"ready", ready.string(), "wait-usr1", "write", "100", "pause"}));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0; }));
  const int old_sup = link_->supervisor_pid();
  kill(old_sup, SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] {
    Reap();
    return !Alive(old_sup);
  }));
  // Written while no supervisor reads: it waits in the FIFO (the driver holds it open).
  kill(h->pid, SIGUSR1);
  ASSERT_TRUE(RunUntil([&] { return link_->connected() && link_->supervisor_pid() != old_sup; }));
  supervisors_.insert(link_->supervisor_pid());
  const fs::path log = logs_ / "t7.stdout.0";
  EXPECT_TRUE(RunUntil([&] { return fs::exists(log) && fs::file_size(log) == 100; }));
  EXPECT_TRUE(Alive(h->pid));
  // Adopted: still the reaper's child, so its exit is journaled and known.
  ASSERT_TRUE(Run(driver_->StopTask("t7", 5s, "SIGTERM")).ok());
  auto r = Run(driver_->WaitTask("t7"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_EQ(r->err, "");
}

TEST_F(RawExecDriverTest, ReportsResourceUsageOfTheProcessGroup) {
  const fs::path ready = dir_.path() / "ready";
  auto h = Start(Config("t8", {"ready", ready.string(), "pause"}));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) > 0; }));
  auto usage = driver_->TaskStats("t8");
  ASSERT_TRUE(usage.ok());
  EXPECT_GT(usage->memory.rss, 0u);
  EXPECT_GT(usage->timestamp, 0);
  EXPECT_TRUE(absl::IsNotFound(driver_->TaskStats("nope").status()));
}

TEST(RawExecWithoutSupervisorTest, IsUnhealthyAndStartsFailRecoverably) {
  asio::io_context io;
  common::RealClock clock;
  testing::TempDir dir;
  SupervisorLink link(io.get_executor(),
                      SupervisorLinkOptions{.binary = dir.path() / "no-such-supervisor",
                                            .dir = dir.path() / "sup"});
  std::optional<absl::Status> started;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { started = co_await link.Start(); }, asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return started.has_value(); }));
  EXPECT_NE(started->message().find("no-such-supervisor"), std::string::npos) << *started;
  RawExecDriver driver(io.get_executor(), clock, link);
  const DriverFingerprint fp = driver.Fingerprint();
  EXPECT_TRUE(fp.detected);
  EXPECT_FALSE(fp.healthy);
  EXPECT_NE(fp.health_description.find("supervisor unavailable"), std::string::npos);
  TaskConfig c;
  c.id = "x";
  c.config = model::Value::Object{{"command", "/bin/true"}};
  std::optional<absl::StatusOr<TaskHandle>> h;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { h = co_await driver.StartTask(c); }, asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return h.has_value(); }));
  ASSERT_FALSE(h->ok());
  EXPECT_TRUE(IsRecoverable(h->status())) << h->status();
}

}  // namespace
}  // namespace drover::drivers
