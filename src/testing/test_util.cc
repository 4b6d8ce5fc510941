#include "testing/test_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "common/mounts.h"
#include "common/offload.h"
#include "testing/fixture_servers.h"

namespace drover::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "drover-test-XXXXXX").string();
  char* p = mkdtemp(tmpl.data());
  path_ = p != nullptr ? std::filesystem::path(p) : std::filesystem::path(tmpl);
}

TempDir::~TempDir() {
  // A test that mounted something here (e.g. an alloc dir's tmpfs) and failed before
  // unmounting must not leave a tree that cannot be removed.
  (void)common::UnmountUnder(path_);
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (pred()) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    // Polling interval between checks of another process's state, not a test delay.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // NOLINT
  }
}

bool RunUntil(asio::io_context& io, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    io.restart();
    io.run_for(std::chrono::milliseconds(2));
  }
  return true;
}

bool RunWithFakeClock(asio::io_context& io, common::FakeClock& clock,
                      const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    io.restart();
    if (io.poll() == 0 && !pred()) {
      const common::Time next = clock.NextDeadline();
      if (common::OffloadsInFlight() > 0) {
        // Work is out on the blocking pool: time must not move until it is back.
        io.restart();
        io.run_for(std::chrono::milliseconds(1));
      } else if (next != common::Time::max()) {
        clock.Advance(std::max(next - clock.Now(), common::Duration(0)));
      } else {
        // Nothing runnable and nobody sleeping on the fake clock: let real I/O
        // (child processes, sockets) make progress.
        io.restart();
        io.run_for(std::chrono::milliseconds(2));
      }
    }
  }
  return true;
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path BinaryPath(const std::string& name) {
  if (const char* dir = std::getenv("DROVER_BINARY_DIR"); dir != nullptr && *dir != '\0')
    return std::filesystem::path(dir) / name;
  return std::filesystem::path(DROVER_BINARY_DIR) / name;
}

namespace {

std::mutex servers_mu;
std::set<pid_t>& Servers() {
  static std::set<pid_t> servers;
  return servers;
}

}  // namespace

bool IsFixtureServer(pid_t pid) {
  std::lock_guard lock(servers_mu);
  return Servers().contains(pid);
}

void ForgetFixtureServer(pid_t pid) {
  std::lock_guard lock(servers_mu);
  Servers().erase(pid);
}

pid_t SpawnServer(std::vector<std::string> args, const std::string& log, int death_signal) {
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, death_signal);
    if (getppid() != parent)
      _exit(1);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
      _exit(1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0)
    return -1;
  std::lock_guard lock(servers_mu);
  Servers().insert(pid);
  return pid;
}

bool WaitServerReady(pid_t pid, const std::function<bool()>& ready,
                     std::chrono::milliseconds timeout, bool* exited) {
  *exited = false;
  const bool done = WaitFor(
      [&] {
        if (waitpid(pid, nullptr, WNOHANG) == pid) {
          ForgetFixtureServer(pid);
          *exited = true;
          return true;
        }
        return ready();
      },
      timeout);
  return done && !*exited;
}

}  // namespace drover::testing
