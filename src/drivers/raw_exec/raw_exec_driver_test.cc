#include "drivers/raw_exec/raw_exec_driver.h"

#include <signal.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::drivers {
namespace {

using namespace std::chrono_literals;  // NOLINT

class RawExecDriverTest : public ::testing::Test {
 protected:
  TaskConfig Config(const std::string& id, const std::string& script) {
    TaskConfig c;
    c.id = id;
    c.task_dir = dir_.path().string();
    c.stdout_path = (dir_.path() / (id + ".stdout")).string();
    c.stderr_path = (dir_.path() / (id + ".stderr")).string();
    c.env = {{"PATH", "/usr/bin:/bin"}, {"GREETING", "hello"}};
    c.config =
        model::Value::Object{{"command", "/bin/sh"}, {"args", model::Value::Array{"-c", script}}};
    return c;
  }

  template <typename T>
  T Run(asio::awaitable<T> op) {
    std::optional<T> out;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { out = co_await std::move(op); }, asio::detached);
    EXPECT_TRUE(testing::RunUntil(
        io_, [&] { return out.has_value(); }, 20s));
    return std::move(*out);
  }

  asio::io_context io_;
  common::RealClock clock_;
  RawExecDriver driver_{io_.get_executor(), clock_};
  testing::TempDir dir_;
};

TEST_F(RawExecDriverTest, RunsCommandWithEnvAndCapturesExitCodeAndOutput) {
  auto h = Run(driver_.StartTask(Config("t1", "echo $GREETING; echo oops >&2; exit 3")));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GT(h->pid, 0);
  EXPECT_GT(h->proc_start_ticks, 0u);
  auto r = Run(driver_.WaitTask("t1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->Successful());
  EXPECT_EQ(testing::ReadFile(dir_.path() / "t1.stdout"), "hello\n");
  EXPECT_EQ(testing::ReadFile(dir_.path() / "t1.stderr"), "oops\n");
  auto st = driver_.InspectTask("t1");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state, TaskRunState::kExited);
  EXPECT_TRUE(driver_.DestroyTask("t1", false).ok());
  EXPECT_TRUE(absl::IsNotFound(driver_.InspectTask("t1").status()));
}

TEST_F(RawExecDriverTest, MissingCommandIsAnUnrecoverableStartError) {
  TaskConfig c = Config("t2", "");
  c.config = model::Value::Object{{"command", "/definitely/not/here"}};
  auto h = Run(driver_.StartTask(c));
  ASSERT_FALSE(h.ok());
  EXPECT_FALSE(IsRecoverable(h.status()));
  EXPECT_NE(h.status().message().find("No such file or directory"), std::string::npos)
      << h.status();
  c.config = model::Value::Object{{"command", "no-such-binary-anywhere"}};
  h = Run(driver_.StartTask(c));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("not found in $PATH"), std::string::npos);
  c.config = model::Value::Object{};
  h = Run(driver_.StartTask(c));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("command"), std::string::npos);
}

TEST_F(RawExecDriverTest, StopSendsSignalToProcessGroup) {
  // The shell forks a grandchild; both must die with the group.
  auto h = Run(driver_.StartTask(Config("t3", "sleep 300 & echo $! > child.pid; wait")));
  ASSERT_TRUE(h.ok()) << h.status();
  const auto pid_file = dir_.path() / "child.pid";
  ASSERT_TRUE(testing::WaitFor([&] { return !testing::ReadFile(pid_file).empty(); }));
  const int grandchild = std::stoi(testing::ReadFile(pid_file));
  auto s = Run(driver_.StopTask("t3", 5s, "SIGTERM"));
  ASSERT_TRUE(s.ok()) << s;
  auto r = Run(driver_.WaitTask("t3"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->signal, SIGTERM);
  EXPECT_TRUE(testing::WaitFor([&] { return kill(grandchild, 0) != 0; }));
}

TEST_F(RawExecDriverTest, StopForceKillsAfterTimeoutWhenSignalIgnored) {
  auto h = Run(driver_.StartTask(
      Config("t4", "trap '' INT TERM; touch ready; while true; do sleep 1; done")));
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return std::filesystem::exists(dir_.path() / "ready"); }));
  auto s = Run(driver_.StopTask("t4", 200ms, "SIGINT"));
  ASSERT_TRUE(s.ok());
  auto r = Run(driver_.WaitTask("t4"));
  EXPECT_EQ(r->signal, SIGKILL);
}

TEST_F(RawExecDriverTest, RecoverRejectsPidWithDifferentStartTime) {
  auto h = Run(driver_.StartTask(Config("t5", "sleep 300")));
  ASSERT_TRUE(h.ok());
  RawExecDriver other(io_.get_executor(), clock_);
  TaskHandle wrong = *h;
  wrong.proc_start_ticks += 1;
  EXPECT_TRUE(absl::IsNotFound(other.RecoverTask(wrong)));
  EXPECT_TRUE(other.RecoverTask(*h).ok());
  ASSERT_TRUE(driver_.SignalTask("t5", "SIGKILL").ok());
  auto r = Run(other.WaitTask("t5"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, -1);  // not our child: exit status unknown
  EXPECT_FALSE(r->err.empty());
  EXPECT_TRUE(Run(driver_.WaitTask("t5")).ok());
}

}  // namespace
}  // namespace drover::drivers
