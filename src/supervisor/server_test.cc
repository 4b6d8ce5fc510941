// The supervisor with real processes (drover-test-helper), in-process and as the real
// drover-supervisor binary.
#include "supervisor/server.h"

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "common/offload.h"
#include "supervisor/client.h"
#include "testing/test_util.h"

extern char** environ;

namespace drover::supervisor {
namespace {

namespace fs = std::filesystem;

std::string Helper() {
  return testing::BinaryPath("drover-test-helper").string();
}

bool Alive(int pid) {
  return kill(pid, 0) == 0;
}

int ReadPid(const fs::path& p) {
  const std::string s = testing::ReadFile(p);
  return s.empty() ? 0 : std::stoi(s);
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Like the real supervisor: orphaned grandchildren come back to us to be reaped.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    StartServer();
    ASSERT_TRUE(Connect(client_));
  }
  void TearDown() override {
    client_.Close();
    StopServer();
    // Nothing a test started may outlive it.
    for (int pid : started_pids_) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
  void StartServer() {
    server_ = std::make_unique<Server>(io_, ServerConfig{socket_, state_});
    ASSERT_TRUE(server_->Start().ok());
  }
  void StopServer() {
    if (!server_)
      return;
    server_->Stop();
    while (io_.poll() > 0) {
    }
    server_.reset();
  }
  bool Connect(Client& c) {
    std::optional<absl::Status> s;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { s = co_await c.Connect(socket_); }, asio::detached);
    return RunUntil([&] { return s.has_value(); }) && s->ok();
  }
  bool RunUntil(const std::function<bool()>& pred) { return testing::RunUntil(io_, pred); }
  template <typename T>
  T Await(asio::awaitable<T> op) {
    std::optional<T> out;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { out.emplace(co_await std::move(op)); },
        asio::detached);
    EXPECT_TRUE(RunUntil([&] { return out.has_value(); }));
    return std::move(*out);
  }
  SpawnSpec Spec(const std::string& id, std::vector<std::string> args) {
    SpawnSpec s;
    s.task_id = id;
    s.argv = {Helper()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.env = {{"PATH", "/usr/bin:/bin"}};
    s.cwd = dir_.path().string();
    return s;
  }
  absl::StatusOr<TaskInfo> Spawn(const SpawnSpec& spec) {
    auto r = Await(client_.Spawn(spec));
    if (r.ok())
      started_pids_.push_back(r->pid);
    return r;
  }
  std::vector<TaskInfo> List(Client& c) {
    auto r = Await(c.List());
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<TaskInfo>{};
  }

  testing::TempDir dir_;
  fs::path socket_ = dir_.path() / "supervisor.sock";
  fs::path state_ = dir_.path() / "state";
  asio::io_context io_;
  std::unique_ptr<Server> server_;
  Client client_{io_.get_executor()};
  std::vector<int> started_pids_;
};

TEST_F(SupervisorTest, ReportsTheExitCodeAndForgetsTheTaskOnceAcknowledged) {
  std::vector<TaskInfo> exits;
  client_.on_exit = [&](const TaskInfo& t) { exits.push_back(t); };
  auto t = Spawn(Spec("t1", {"exit", "3"}));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->pid, 0);
  EXPECT_GT(t->start_ticks, 0u);
  ASSERT_TRUE(RunUntil([&] { return !exits.empty(); }));
  EXPECT_EQ(exits[0].task_id, "t1");
  ASSERT_TRUE(exits[0].exit.has_value());
  EXPECT_EQ(exits[0].exit->exit_code, 3);
  EXPECT_FALSE(exits[0].exit->unknown);
  auto listed = List(client_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_FALSE(listed[0].running);
  ASSERT_TRUE(Await(client_.AckExit("t1")).ok());
  EXPECT_TRUE(List(client_).empty());
  EXPECT_TRUE(Await(client_.AckExit("t1")).ok());  // idempotent
}

TEST_F(SupervisorTest, PumpsOutputIntoRotatedLogFiles) {
  SpawnSpec spec = Spec("logs", {"write", "2500", "stderr", "10"});
  spec.logs = {.dir = dir_.path().string(),
               .stdout_base = "t.stdout",
               .stderr_base = "t.stderr",
               .max_files = 2,
               .max_file_size = 1000};
  ASSERT_TRUE(Spawn(spec).ok());
  const fs::path d = dir_.path();
  ASSERT_TRUE(RunUntil([&] {
    return fs::exists(d / "t.stdout.2") && fs::file_size(d / "t.stdout.2") == 500 &&
           fs::exists(d / "t.stderr.0") && fs::file_size(d / "t.stderr.0") == 10;
  }));
  EXPECT_FALSE(fs::exists(d / "t.stdout.0"));  // only max_files are kept
  EXPECT_EQ(fs::file_size(d / "t.stdout.1"), 1000u);
  EXPECT_EQ(testing::ReadFile(d / "t.stderr.0"), "eeeeeeeeee");
}

TEST_F(SupervisorTest, OutputIsInTheFilesBeforeTheExitIsReported) {
  SpawnSpec spec = Spec("quick", {"write", "70000", "exit", "0"});
  spec.logs = {.dir = dir_.path().string(), .stdout_base = "q.stdout", .stderr_base = "q.stderr"};
  uintmax_t size_at_exit = 0;
  bool exited = false;
  client_.on_exit = [&](const TaskInfo&) {
    exited = true;
    size_at_exit = fs::file_size(dir_.path() / "q.stdout.0");
  };
  ASSERT_TRUE(Spawn(spec).ok());
  ASSERT_TRUE(RunUntil([&] { return exited; }));
  EXPECT_EQ(size_at_exit, 70000u);
}

TEST_F(SupervisorTest, AnAdoptedTaskKeepsItsLogs) {
  const fs::path ready = dir_.path() / "ready";
  SpawnSpec spec = Spec("chatty", {"ready", ready.string(), "wait-usr1", "write", "123", "pause"});
  spec.logs = {.dir = dir_.path().string(), .stdout_base = "c.stdout", .stderr_base = "c.stderr"};
  auto t = Spawn(spec);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(RunUntil([&] { return ReadPid(ready) > 0; }));
  client_.Close();
  StopServer();
  StartServer();
  // The new supervisor reopened the task's FIFO: what it writes now is kept.
  kill(t->pid, SIGUSR1);
  const fs::path log = dir_.path() / "c.stdout.0";
  EXPECT_TRUE(RunUntil([&] { return fs::exists(log) && fs::file_size(log) == 123; }));
  EXPECT_TRUE(Alive(t->pid));
}

// How many of this process's descriptors are open on `file`.
int OpenDescriptorsOn(const fs::path& file) {
  int n = 0;
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    n += fs::read_symlink(fd.path(), link_ec) == file ? 1 : 0;
  }
  return n;
}

TEST_F(SupervisorTest, LogFilesExistFromTheStartButAreOpenedAtTheFirstOutput) {
  const fs::path ready = dir_.path() / "ready";
  SpawnSpec spec = Spec("quiet", {"ready", ready.string(), "wait-usr1", "write", "5", "pause"});
  spec.logs = {.dir = dir_.path().string(), .stdout_base = "q.stdout", .stderr_base = "q.stderr"};
  auto t = Spawn(spec);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(RunUntil([&] { return ReadPid(ready) > 0; }));
  const fs::path out = dir_.path() / "q.stdout.0";
  const fs::path err = dir_.path() / "q.stderr.0";
  // Readers find both files, and a task that writes nothing costs no descriptors on them.
  EXPECT_TRUE(fs::exists(out));
  EXPECT_TRUE(fs::exists(err));
  EXPECT_EQ(OpenDescriptorsOn(out), 0);
  EXPECT_EQ(OpenDescriptorsOn(err), 0);
  kill(t->pid, SIGUSR1);
  ASSERT_TRUE(RunUntil([&] { return fs::file_size(out) == 5; }));
  EXPECT_EQ(testing::ReadFile(out), "xxxxx");
  EXPECT_EQ(OpenDescriptorsOn(out), 1);
  EXPECT_EQ(OpenDescriptorsOn(err), 0);
}

TEST_F(SupervisorTest, LogsGoToTheDirAsItWasAtSpawnWhateverTakesItsNameLater) {
  const fs::path logs = dir_.path() / "logs";
  const fs::path moved = dir_.path() / "moved";
  fs::create_directory(logs);
  const fs::path ready = dir_.path() / "ready";
  SpawnSpec spec = Spec("mover", {"ready", ready.string(), "wait-usr1", "write", "7", "pause"});
  spec.logs = {.dir = logs.string(), .stdout_base = "m.stdout", .stderr_base = "m.stderr"};
  auto t = Spawn(spec);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(RunUntil([&] { return ReadPid(ready) > 0; }));
  // Before its first output, the task's log dir is renamed and another takes its name
  // (a symlink elsewhere would do the same for the supervisor, root, opening by name).
  fs::rename(logs, moved);
  fs::create_directory(logs);
  kill(t->pid, SIGUSR1);
  ASSERT_TRUE(RunUntil([&] { return fs::file_size(moved / "m.stdout.0") == 7; }));
  EXPECT_FALSE(fs::exists(logs / "m.stdout.0"));
}

TEST_F(SupervisorTest, ShutdownIsRefusedWhileTasksRun) {
  bool exit_requested = false;
  server_->on_exit_requested = [&] { exit_requested = true; };
  auto info = Await(client_.Call({{"op", "info"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ((*info)["pid"], getpid());
  const fs::path ready = dir_.path() / "ready";
  auto t = Spawn(Spec("busy", {"ready", ready.string(), "pause"}));
  ASSERT_TRUE(t.ok());
  auto refused = Await(client_.Call({{"op", "shutdown"}}));
  EXPECT_NE(refused.status().message().find("1 task(s) still running"), std::string::npos)
      << refused.status();
  ASSERT_TRUE(Await(client_.Signal("busy", "SIGKILL")).ok());
  ASSERT_TRUE(RunUntil([&] { return !List(client_)[0].running; }));
  ASSERT_TRUE(Await(client_.Call({{"op", "shutdown"}})).ok());
  EXPECT_TRUE(RunUntil([&] { return exit_requested && !client_.connected(); }));
}

// A request sent behind an accepted shutdown (the two read together) is not carried
// out: a task spawned then would outlive the supervisor unwatched.
TEST_F(SupervisorTest, NothingIsSpawnedBehindAnAcceptedShutdown) {
  bool exit_requested = false;
  server_->on_exit_requested = [&] { exit_requested = true; };
  std::optional<absl::StatusOr<Json>> shutdown;
  std::optional<absl::StatusOr<TaskInfo>> spawn;
  const SpawnSpec spec = Spec("late", {"pause"});
  // Both queued before the loop runs: they go out back to back.
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        Json req = {{"op", "shutdown"}};  // named: see GCC 12 in development.md
        shutdown = co_await client_.Call(std::move(req));
      },
      asio::detached);
  asio::co_spawn(
      io_, [&]() -> asio::awaitable<void> { spawn = co_await client_.Spawn(spec); },
      asio::detached);
  ASSERT_TRUE(RunUntil([&] { return shutdown.has_value() && spawn.has_value(); }));
  EXPECT_TRUE(shutdown->ok()) << shutdown->status();
  // Refused, or the connection gone first: never started.
  EXPECT_FALSE(spawn->ok());
  EXPECT_EQ(server_->num_tasks(), 0u);
  EXPECT_TRUE(RunUntil([&] { return exit_requested; }));
}

TEST_F(SupervisorTest, ExitsWhenItsSocketFileIsGone) {
  StopServer();
  bool exit_requested = false;
  server_ =
      std::make_unique<Server>(io_, ServerConfig{socket_, state_, std::chrono::milliseconds(10)});
  server_->on_exit_requested = [&] { exit_requested = true; };
  ASSERT_TRUE(server_->Start().ok());
  fs::remove(socket_);
  EXPECT_TRUE(RunUntil([&] { return exit_requested; }));
}

TEST_F(SupervisorTest, SignalReachesTheWholeProcessGroup) {
  std::vector<TaskInfo> exits;
  client_.on_exit = [&](const TaskInfo& t) { exits.push_back(t); };
  const fs::path gc = dir_.path() / "grandchild";
  const fs::path ready = dir_.path() / "ready";
  auto t = Spawn(
      Spec("g", {"ignore-term", "grandchild", gc.string(), "ready", ready.string(), "pause"}));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(RunUntil([&] { return ReadPid(ready) > 0 && ReadPid(gc) > 0; }));
  const int grandchild = ReadPid(gc);
  // SIGTERM is ignored by the task itself (but not by the grandchild's default).
  ASSERT_TRUE(Await(client_.Signal("g", "SIGKILL")).ok());
  ASSERT_TRUE(RunUntil([&] { return !exits.empty(); }));
  EXPECT_EQ(exits[0].exit->signal, SIGKILL);
  // Reaped by the subreaper (this process, as drover-supervisor is for real).
  EXPECT_TRUE(RunUntil([&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return !Alive(grandchild);
  }));
  EXPECT_FALSE(Await(client_.Signal("g", "SIGTERM", false)).ok());  // no longer running
  EXPECT_TRUE(Await(client_.Signal("g", "SIGTERM")).ok());          // its group: nothing left, fine
  EXPECT_FALSE(Await(client_.Signal("nope", "SIGTERM")).ok());
}

TEST_F(SupervisorTest, ROOT_AppliesRlimitsAndTheGroup) {
  if (geteuid() != 0)
    GTEST_SKIP() << "changing the group needs root";
  std::vector<TaskInfo> exits;
  client_.on_exit = [&](const TaskInfo& t) { exits.push_back(t); };
  SpawnSpec spec = Spec("limits", {});
  const fs::path out = dir_.path() / "out";
  spec.argv = {"/bin/sh", "-c", "ulimit -n > " + out.string() + "; id -g >> " + out.string()};
  spec.rlimits = {{.resource = "nofile", .soft = 123, .hard = 456}};
  spec.group = "nogroup";
  ASSERT_TRUE(Spawn(spec).ok());
  ASSERT_TRUE(RunUntil([&] { return !exits.empty(); }));
  EXPECT_EQ(exits[0].exit->exit_code, 0);
  EXPECT_EQ(testing::ReadFile(out), "123\n65534\n");
  spec = Spec("bad", {});
  spec.rlimits = {{.resource = "widgets", .soft = 1, .hard = 1}};
  EXPECT_NE(Spawn(spec).status().message().find("unknown rlimit resource"), std::string::npos);
  spec.rlimits = {{.resource = "nofile", .soft = 9, .hard = 1}};
  EXPECT_NE(Spawn(spec).status().message().find("soft limit above hard limit"), std::string::npos);
  spec.rlimits.clear();
  spec.group = "no-such-group-here";
  EXPECT_NE(Spawn(spec).status().message().find("group \"no-such-group-here\" not found"),
            std::string::npos);
}

TEST_F(SupervisorTest, StartFailuresAreClearErrors) {
  auto missing = Spawn(Spec("m", {}));
  ASSERT_TRUE(missing.ok());  // control: the helper itself starts
  SpawnSpec spec = Spec("x", {});
  spec.argv = {"/nonexistent/binary"};
  auto r = Spawn(spec);
  EXPECT_NE(r.status().message().find("No such file or directory"), std::string::npos)
      << r.status();
  spec.argv = {"no-such-command-anywhere"};
  r = Spawn(spec);
  EXPECT_NE(r.status().message().find("not found in PATH"), std::string::npos) << r.status();
  const fs::path plain = dir_.path() / "plain";
  std::ofstream(plain) << "not a program";
  spec.argv = {plain.string()};
  r = Spawn(spec);
  EXPECT_NE(r.status().message().find("Permission denied"), std::string::npos) << r.status();
  spec = Spec("u", {});
  spec.user = "no-such-user-here";
  r = Spawn(spec);
  EXPECT_NE(r.status().message().find("user \"no-such-user-here\" not found"), std::string::npos)
      << r.status();
  // Only the control task was recorded.
  EXPECT_EQ(List(client_).size(), 1u);
}

// Many spawns sent at once are each answered, each quick task's exit is reported, and a
// child that fails its setup after the clone is no task: an error, and no exit.
TEST_F(SupervisorTest, ManySpawnsAtOnceAreEachAnsweredAndTheirExitsReported) {
  constexpr int kTasks = 20;
  std::map<std::string, int> exit_codes;
  client_.on_exit = [&](const TaskInfo& t) {
    exit_codes[t.task_id] = t.exit ? t.exit->exit_code : -1;
  };
  std::vector<std::optional<absl::StatusOr<TaskInfo>>> replies(kTasks + 1);
  for (int i = 0; i <= kTasks; ++i) {
    SpawnSpec spec = Spec("q" + std::to_string(i), {"exit", "7"});
    if (i == kTasks)
      spec.cwd = (dir_.path() / "no-such-dir").string();  // fails after the clone
    asio::co_spawn(
        io_,
        [&, spec, i]() -> asio::awaitable<void> {
          replies[i].emplace(co_await client_.Spawn(spec));
          if (replies[i]->ok())
            started_pids_.push_back((*replies[i])->pid);
        },
        asio::detached);
  }
  ASSERT_TRUE(RunUntil([&] {
    return std::all_of(replies.begin(), replies.end(), [](const auto& r) { return r.has_value(); });
  }));
  for (int i = 0; i < kTasks; ++i)
    ASSERT_TRUE(replies[i]->ok()) << i << ": " << replies[i]->status();
  EXPECT_NE(replies[kTasks]->status().message().find("chdir"), std::string::npos)
      << replies[kTasks]->status();
  ASSERT_TRUE(RunUntil([&] { return exit_codes.size() >= kTasks; }));
  for (int i = 0; i < kTasks; ++i)
    EXPECT_EQ(exit_codes["q" + std::to_string(i)], 7) << i;
  EXPECT_FALSE(exit_codes.contains("q" + std::to_string(kTasks)));
  EXPECT_EQ(List(client_).size(), static_cast<size_t>(kTasks));
}

TEST_F(SupervisorTest, AMalformedFrameClosesOnlyItsConnection) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(write(fd, "\xff\xff\xff\xff", 4), 4);
  char c;
  ssize_t n = -1;
  ASSERT_TRUE(RunUntil([&] {
    n = recv(fd, &c, 1, MSG_DONTWAIT);
    return n == 0;  // EOF: the supervisor hung up on it
  }));
  close(fd);
  EXPECT_TRUE(List(client_).empty());  // the other connection still works
  EXPECT_EQ(fs::status(socket_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(SupervisorTest, ANewSupervisorAdoptsRunningTasksAndSettlesDeadOnes) {
  const fs::path r1 = dir_.path() / "r1";
  const fs::path r2 = dir_.path() / "r2";
  auto live = Spawn(Spec("live", {"ready", r1.string(), "pause"}));
  auto dies = Spawn(Spec("dies", {"ready", r2.string(), "pause"}));
  ASSERT_TRUE(live.ok() && dies.ok());
  ASSERT_TRUE(RunUntil([&] { return ReadPid(r1) > 0 && ReadPid(r2) > 0; }));
  client_.Close();
  StopServer();
  // While no supervisor runs, one task dies (and is reaped here, its parent).
  kill(dies->pid, SIGKILL);
  waitpid(dies->pid, nullptr, 0);
  EXPECT_TRUE(Alive(live->pid));

  StartServer();
  Client again(io_.get_executor());
  ASSERT_TRUE(Connect(again));
  std::vector<TaskInfo> exits;
  again.on_exit = [&](const TaskInfo& t) { exits.push_back(t); };
  std::map<std::string, TaskInfo> by_id;
  for (const auto& t : List(again))
    by_id[t.task_id] = t;
  ASSERT_EQ(by_id.size(), 2u);
  EXPECT_TRUE(by_id["live"].running);
  EXPECT_EQ(by_id["live"].pid, live->pid);
  EXPECT_FALSE(by_id["dies"].running);
  EXPECT_TRUE(by_id["dies"].exit->unknown);
  // A later death of the adopted task is noticed, its code unknown.
  kill(live->pid, SIGKILL);
  ASSERT_TRUE(RunUntil([&] { return !exits.empty(); }));
  EXPECT_EQ(exits[0].task_id, "live");
  EXPECT_TRUE(exits[0].exit->unknown);
  again.Close();
}

// Kills (and reaps) every process it names when the test ends, however it ends.
struct KillOnExit {
  std::vector<pid_t> pids;
  ~KillOnExit() {
    for (pid_t p : pids) {
      kill(-p, SIGKILL);
      kill(p, SIGKILL);
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
};

// The real binary: SIGKILL it, the task keeps running, a new one adopts it.
TEST(SupervisorProcessTest, TasksOutliveAKilledSupervisor) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  KillOnExit guard;
  testing::TempDir dir;
  const fs::path sock = dir.path() / "s.sock";
  const fs::path state = dir.path() / "state";
  auto start = [&]() -> pid_t {
    fs::remove(sock);  // a killed supervisor leaves its socket file behind
    const std::string bin = testing::BinaryPath("drover-supervisor").string();
    std::vector<std::string> args = {
        bin, "-socket", sock.string(), "-state-dir", state.string(), "-log-level", "warn"};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, bin.c_str(), nullptr, nullptr, argv.data(), environ), 0);
    guard.pids.push_back(pid);
    EXPECT_TRUE(testing::WaitFor([&] { return fs::exists(sock); }));
    return pid;
  };
  asio::io_context io;
  // The socket file appears when the supervisor binds, a moment before it listens: a
  // connection refused in between is tried again.
  auto connect = [&](Client& client) {
    return testing::WaitFor([&] {
      std::optional<absl::Status> r;
      asio::co_spawn(
          io, [&]() -> asio::awaitable<void> { r = co_await client.Connect(sock); },
          asio::detached);
      return testing::RunUntil(io, [&] { return r.has_value(); }) && r->ok();
    });
  };
  const pid_t sup = start();
  Client c(io.get_executor());
  ASSERT_TRUE(connect(c));
  SpawnSpec spec;
  spec.task_id = "survivor";
  const fs::path ready = dir.path() / "ready";
  spec.argv = {Helper(), "ready", ready.string(), "pause"};
  std::optional<absl::StatusOr<TaskInfo>> spawned;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { spawned = co_await c.Spawn(spec); }, asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return spawned.has_value(); }));
  ASSERT_TRUE(spawned->ok()) << spawned->status();
  const int task_pid = (*spawned)->pid;
  guard.pids.push_back(task_pid);
  ASSERT_TRUE(testing::WaitFor([&] { return ReadPid(ready) == task_pid; }));

  kill(sup, SIGKILL);
  waitpid(sup, nullptr, 0);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return !c.connected(); }));
  EXPECT_TRUE(Alive(task_pid));

  const pid_t sup2 = start();
  Client c2(io.get_executor());
  ASSERT_TRUE(connect(c2));
  std::optional<absl::StatusOr<std::vector<TaskInfo>>> listed;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { listed = co_await c2.List(); }, asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return listed.has_value(); }));
  ASSERT_TRUE(listed->ok());
  ASSERT_EQ((*listed)->size(), 1u);
  EXPECT_TRUE((**listed)[0].running);
  EXPECT_EQ((**listed)[0].pid, task_pid);

  std::vector<TaskInfo> exits;
  c2.on_exit = [&](const TaskInfo& t) { exits.push_back(t); };
  kill(task_pid, SIGKILL);
  ASSERT_TRUE(testing::RunUntil(io, [&] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return !exits.empty();
  }));
  EXPECT_TRUE(exits[0].exit->unknown);
  c2.Close();
  kill(sup2, SIGTERM);
  waitpid(sup2, nullptr, 0);
}

}  // namespace
}  // namespace drover::supervisor
