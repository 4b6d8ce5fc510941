#include "devices/external/plugin_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

#include "common/logging.h"

namespace drover::devices::external {

namespace {

using Clock = std::chrono::steady_clock;

// stderr text without a newline is logged in pieces of this size.
constexpr size_t kMaxStderrLine = 4096;
// Reads of stderr between two checks for Kill(); after Kill(), the last of them, so a
// process outside the group that keeps writing cannot hold the thread.
constexpr int kMaxReadsPerWakeup = 64;

std::string Errno(int err) {
  return std::strerror(err);
}

// poll()'s timeout for `deadline`: rounded up, so a poll never returns just before it.
int RemainingMs(PluginProcess::Deadline deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero())
    return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

absl::Status SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return absl::InternalError(absl::StrCat("fcntl(O_NONBLOCK): ", Errno(errno)));
  return absl::OkStatus();
}

void CloseFd(int& fd) {
  if (fd >= 0)
    close(fd);
  fd = -1;
}

// Blocks SIGPIPE on this thread while writing to a pipe whose reader may be gone, and
// discards the SIGPIPE such a write raised, so the write fails with EPIPE instead of
// the signal killing the agent (whatever its disposition).
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
  }
  ~ScopedSigpipeBlock() {
    if (!was_pending_) {
      const timespec zero{};
      while (sigtimedwait(&pipe_set_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_set_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

absl::Status SpawnError(int err, const std::string& command) {
  const std::string msg = absl::StrCat("failed to start '", command, "': ", Errno(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::UnavailableError(msg);
  }
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status))
    return absl::StrCat("status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return absl::StrCat("signal ", WTERMSIG(status));
  return absl::StrCat("wait status ", status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PluginProcess>> PluginProcess::Start(
    const std::string& name, const std::string& command, const std::vector<std::string>& args) {
  if (command.empty())
    return absl::InvalidArgumentError("no command to start");
  // [0] read end, [1] write end; all close-on-exec, so only the dup2'd copies reach
  // the plugin.
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, wake[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in, out, err, wake}) {
      CloseFd(p[0]);
      CloseFd(p[1]);
    }
  };
  for (int* p : {in, out, err, wake}) {
    if (pipe2(p, O_CLOEXEC) != 0) {
      const int e = errno;
      close_all();
      return absl::ResourceExhaustedError(absl::StrCat("pipe2: ", Errno(e)));
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  // Nothing else: another thread may have created an fd it has not yet marked
  // close-on-exec (glibc >= 2.34; close_range in the child).
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  // Its own process group, so Kill() reaches whatever it starts; and the dispositions a
  // fresh process expects rather than the agent's (which ignores SIGPIPE).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(command.c_str()));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, command.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  CloseFd(in[0]);
  CloseFd(out[1]);
  CloseFd(err[1]);
  if (rc != 0) {
    close_all();
    return SpawnError(rc, command);
  }
  for (int fd : {in[1], out[0], err[0]}) {
    if (absl::Status s = SetNonBlocking(fd); !s.ok()) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      close_all();
      return s;
    }
  }
  std::unique_ptr<PluginProcess> process(
      new PluginProcess(name, pid, in[1], out[0], err[0], wake[0], wake[1]));
  process->stderr_thread_ = std::thread([p = process.get()] { p->ForwardStderr(); });
  return process;
}

PluginProcess::PluginProcess(std::string name, pid_t pid, int stdin_fd, int stdout_fd,
                             int stderr_fd, int wake_read_fd, int wake_write_fd)
    : name_(std::move(name)),
      pid_(pid),
      stdin_fd_(stdin_fd),
      stdout_fd_(stdout_fd),
      stderr_fd_(stderr_fd),
      wake_read_fd_(wake_read_fd),
      wake_write_fd_(wake_write_fd) {}

PluginProcess::~PluginProcess() {
  Kill();
  Reap(std::chrono::milliseconds(0), kForever);
  if (stderr_thread_.joinable())
    stderr_thread_.join();
  for (int fd : {stdin_fd_, stdout_fd_, stderr_fd_, wake_read_fd_, wake_write_fd_})
    close(fd);
}

absl::Status PluginProcess::WriteLine(std::string_view line, Deadline deadline) {
  std::string data(line);
  data.push_back('\n');
  ScopedSigpipeBlock no_sigpipe;
  size_t written = 0;
  while (written < data.size()) {
    if (killed())
      return absl::AbortedError("killed");
    const ssize_t n = write(stdin_fd_, data.data() + written, data.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EPIPE)
      return killed() ? absl::AbortedError("killed")
                      : absl::UnavailableError("it closed its stdin");
    if (n < 0 && errno != EAGAIN)
      return absl::UnavailableError(absl::StrCat("write to its stdin: ", Errno(errno)));
    // The pipe is full: wait for the plugin to read, or for Kill().
    pollfd fds[2] = {{stdin_fd_, POLLOUT, 0}, {wake_read_fd_, POLLIN, 0}};
    const int rc = poll(fds, 2, RemainingMs(deadline));
    if (rc < 0 && errno != EINTR)
      return absl::InternalError(absl::StrCat("poll: ", Errno(errno)));
    if (rc > 0 && fds[1].revents != 0)
      return absl::AbortedError("killed");
    if (rc == 0 && Clock::now() >= deadline)
      return absl::DeadlineExceededError("it did not read its stdin");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PluginProcess::ReadLine(Deadline deadline) {
  size_t scanned = 0;  // no newline in stdout_buf_[0, scanned)
  char chunk[64 * 1024];
  for (;;) {
    const size_t newline = stdout_buf_.find('\n', scanned);
    if (newline != std::string::npos) {
      if (newline > kMaxLineBytes)
        break;
      std::string line = stdout_buf_.substr(0, newline);
      stdout_buf_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      return line;
    }
    scanned = stdout_buf_.size();
    if (stdout_buf_.size() > kMaxLineBytes)
      break;
    if (Clock::now() >= deadline)
      return absl::DeadlineExceededError("no answer in time");
    pollfd fds[2] = {{stdout_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    const int rc = poll(fds, 2, RemainingMs(deadline));
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      return absl::InternalError(absl::StrCat("poll: ", Errno(errno)));
    }
    if (fds[1].revents != 0)
      return absl::AbortedError("killed");
    if (fds[0].revents == 0)
      continue;  // timed out: the deadline check above reports it
    const ssize_t n = read(stdout_fd_, chunk, sizeof chunk);
    if (n > 0) {
      stdout_buf_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return killed() ? absl::AbortedError("killed")
                      : absl::UnavailableError("end of file on its stdout");
    } else if (errno != EAGAIN && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("read from its stdout: ", Errno(errno)));
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("a line longer than ", kMaxLineBytes >> 20, " MiB"));
}

void PluginProcess::Kill() {
  std::lock_guard lock(mu_);
  // Flag and wake before the signal, so a reader that sees the end of file our SIGKILL
  // causes also sees that it was killed (Aborted, not Unavailable).
  if (!killed_) {
    killed_ = true;
    const char byte = 'k';
    // Never drained: the wake pipe stays readable, so every later poll() sees it too.
    const ssize_t ignored = write(wake_write_fd_, &byte, 1);
    (void)ignored;
  }
  if (!reaped_)
    kill(-pid_, SIGKILL);
}

bool PluginProcess::killed() const {
  std::lock_guard lock(mu_);
  return killed_;
}

bool PluginProcess::WaitExit(std::chrono::milliseconds grace) {
  // Without reaping (WNOWAIT): until the pid is reaped under mu_, Kill() on another
  // thread can still signal the group without hitting a reused pid.
  auto exited = [this](int options) {
    siginfo_t info{};
    int rc;
    do {
      rc = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT | options);
    } while (rc < 0 && errno == EINTR);
    // ECHILD: reaped elsewhere (a SIGCHLD set to SIG_IGN); nothing left to wait for.
    return rc < 0 || info.si_pid == pid_;
  };
  if (grace == kForever)
    return exited(0);
  // Short naps: this runs only after a failure, and for at most `grace`.
  const auto deadline = Clock::now() + grace;
  auto nap = std::chrono::microseconds(200);
  while (!exited(WNOHANG)) {
    const auto now = Clock::now();
    if (now >= deadline)
      return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(nap, deadline - now));
    nap = std::min(nap * 2, std::chrono::microseconds(20'000));
  }
  return true;
}

std::optional<std::string> PluginProcess::Reap(std::chrono::milliseconds exit_grace,
                                               std::chrono::milliseconds kill_grace) {
  std::lock_guard reap_lock(reap_mu_);
  if (exit_description_)
    return exit_description_;
  // A process that closed its stdout is usually exiting; `exit_grace` lets the error
  // say how it ended.
  if (!WaitExit(exit_grace)) {
    Kill();
    if (!WaitExit(kill_grace))
      return std::nullopt;
  }
  int status = 0;
  pid_t rc;
  {
    std::lock_guard lock(mu_);
    // The leader is dead (a zombie holding its pid): take down the rest of its group.
    kill(-pid_, SIGKILL);
    do {
      rc = waitpid(pid_, &status, WNOHANG);  // it has exited: returns at once
    } while (rc < 0 && errno == EINTR);
    reaped_ = true;
  }
  exit_description_ = rc <= 0 ? "unknown status (reaped elsewhere)" : DescribeWaitStatus(status);
  return exit_description_;
}

void PluginProcess::ForwardStderr() {
  std::string buf;
  auto log_lines = [&](bool flush_all) {
    size_t start = 0;
    for (;;) {
      const size_t nl = buf.find('\n', start);
      const bool too_long = nl == std::string::npos && buf.size() - start >= kMaxStderrLine;
      if (nl == std::string::npos && !too_long)
        break;
      const size_t end = too_long ? start + kMaxStderrLine : nl;
      DROVER_LOG_INFO("device plugin '{}': {}", name_, buf.substr(start, end - start));
      start = too_long ? end : nl + 1;
    }
    buf.erase(0, start);
    if (flush_all && !buf.empty()) {
      DROVER_LOG_INFO("device plugin '{}': {}", name_, buf);
      buf.clear();
    }
  };
  char chunk[4096];
  bool done = false;
  while (!done) {
    pollfd fds[2] = {{stderr_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    const bool woken = fds[1].revents != 0;
    // Drain what is there now (bounded, so Kill() is noticed even under a flood); after
    // Kill() that is the last of it.
    for (int reads = 0; reads < kMaxReadsPerWakeup; ++reads) {
      const ssize_t n = read(stderr_fd_, chunk, sizeof chunk);
      if (n > 0) {
        buf.append(chunk, static_cast<size_t>(n));
        log_lines(false);
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      done = n == 0 || (n < 0 && errno != EAGAIN);
      break;
    }
    done = done || woken;
  }
  log_lines(true);
}

}  // namespace drover::devices::external
