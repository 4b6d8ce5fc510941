// drover-reaper and drover-supervisor as the agent runs them (docs/supervisor.md): an
// exit is collected only once it is in the journal, and a supervisor whose reaper died
// exits, its successor reporting the orphaned task's exit as unknown.
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "supervisor/client.h"
#include "supervisor/exit_journal.h"
#include "testing/test_util.h"

extern char** environ;

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// /proc/<pid>/stat's state letter ('Z' for a zombie), or 0 when there is no such process.
char State(int pid) {
  const std::string stat = testing::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

class ReaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The reaper is started as our child; what it orphans when killed comes back here.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    fs::create_directories(state_);
  }
  void TearDown() override {
    client_.reset();
    for (int pid : pids_) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  // Starts a reaper and its supervisor on this test's state dir; connects to it.
  pid_t StartPair() {
    fs::remove(sock_);
    const std::string reaper = testing::BinaryPath("drover-reaper").string();
    std::vector<std::string> args = {reaper,
                                     "-journal",
                                     journal_.string(),
                                     "--",
                                     testing::BinaryPath("drover-supervisor").string(),
                                     "-socket",
                                     sock_.string(),
                                     "-state-dir",
                                     state_.string(),
                                     "-journal",
                                     journal_.string(),
                                     "-log-level",
                                     "warn"};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, reaper.c_str(), nullptr, nullptr, argv.data(), environ), 0);
    pids_.push_back(pid);
    client_ = std::make_unique<Client>(io_.get_executor());
    EXPECT_TRUE(testing::WaitFor([&] {
      std::optional<absl::Status> r;
      asio::co_spawn(
          io_, [&]() -> asio::awaitable<void> { r = co_await client_->Connect(sock_); },
          asio::detached);
      return testing::RunUntil(io_, [&] { return r.has_value(); }) && r->ok();
    }));
    pids_.push_back(SupervisorPid());
    return pid;
  }
  int SupervisorPid() {
    const std::string s = testing::ReadFile(state_ / "supervisor.pid");
    return s.empty() ? 0 : std::stoi(s);
  }
  TaskInfo Spawn(const std::string& id) {
    SpawnSpec spec;
    spec.task_id = id;
    const fs::path ready = dir_.path() / (id + ".ready");
    spec.argv = {testing::BinaryPath("drover-test-helper").string(), "ready", ready.string(),
                 "pause"};
    std::optional<absl::StatusOr<TaskInfo>> spawned;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { spawned = co_await client_->Spawn(spec); },
        asio::detached);
    EXPECT_TRUE(testing::RunUntil(io_, [&] { return spawned.has_value(); }));
    EXPECT_TRUE(spawned.has_value() && spawned->ok());
    TaskInfo info = spawned.has_value() && spawned->ok() ? **spawned : TaskInfo{};
    pids_.push_back(info.pid);
    EXPECT_TRUE(testing::WaitFor([&] { return fs::exists(ready); }));
    return info;
  }

  testing::TempDir dir_;
  fs::path state_ = dir_.path() / "state";
  fs::path sock_ = dir_.path() / "s.sock";
  fs::path journal_ = state_ / "exits.journal";
  asio::io_context io_;
  std::unique_ptr<Client> client_;
  std::vector<int> pids_;
};

TEST_F(ReaperTest, AnExitIsCollectedOnlyOnceItIsJournaled) {
  StartPair();
  const TaskInfo task = Spawn("t");
  ASSERT_GT(task.start_ticks, 0u);
  EXPECT_EQ(State(task.pid), 'S');  // its parent is the reaper, not the supervisor
  EXPECT_NE(testing::ReadFile("/proc/" + std::to_string(task.pid) + "/stat")
                .find(") S " + std::to_string(pids_[0]) + " "),
            std::string::npos);

  // The journal cannot be written (a directory stands where it was).
  fs::rename(journal_, journal_.string() + ".old");
  fs::create_directory(journal_);
  kill(task.pid, SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return State(task.pid) == 'Z'; }));
  // The kernel keeps the status meanwhile: the reaper tries each second and collects
  // nothing.
  EXPECT_FALSE(testing::WaitFor([&] { return State(task.pid) != 'Z'; }, 1200ms));

  fs::remove(journal_);
  ASSERT_TRUE(testing::WaitFor([&] { return State(task.pid) == 0; }));
  JournalReader reader(journal_.string());
  auto exits = reader.ReadNew();
  ASSERT_TRUE(exits.ok()) << exits.status();
  ASSERT_EQ(exits->size(), 1u);
  EXPECT_EQ((*exits)[0].pid, task.pid);
  EXPECT_EQ((*exits)[0].start_ticks, task.start_ticks);
  EXPECT_EQ((*exits)[0].signal, SIGKILL);
  EXPECT_EQ((*exits)[0].boot, CurrentBoot());
}

TEST_F(ReaperTest, ASupervisorWhoseReaperDiedExitsAndTheTasksExitIsThenUnknown) {
  const pid_t reaper = StartPair();
  const int supervisor = SupervisorPid();
  const TaskInfo task = Spawn("t");
  kill(reaper, SIGKILL);
  // The supervisor sees its reaper gone and exits; the task lives on, orphaned (here,
  // to this subreaper test; on a node, to init).
  ASSERT_TRUE(testing::WaitFor([&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return kill(supervisor, 0) != 0;
  }));
  EXPECT_EQ(kill(task.pid, 0), 0);

  StartPair();
  std::vector<TaskInfo> exits;
  client_->on_exit = [&](const TaskInfo& t) { exits.push_back(t); };
  kill(task.pid, SIGKILL);
  ASSERT_TRUE(testing::RunUntil(
      io_,
      [&] {
        while (waitpid(-1, nullptr, WNOHANG) > 0) {  // we collect it: its parent now
        }
        return !exits.empty();
      },
      10s));
  EXPECT_EQ(exits[0].task_id, "t");
  EXPECT_TRUE(exits[0].exit->unknown);
}

}  // namespace
}  // namespace drover::supervisor
