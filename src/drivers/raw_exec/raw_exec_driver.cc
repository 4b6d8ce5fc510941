#include "drivers/raw_exec/raw_exec_driver.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "common/logging.h"

extern char** environ;

namespace drover::drivers {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

struct RawExecDriver::Task {
  TaskHandle handle;
  bool is_child = true;  // false for tasks recovered after an agent restart
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;
  std::unique_ptr<common::Event> exited;
  std::optional<ExitResult> result;
  Time started_at{};
  Time completed_at{};
  // Previous CPU sample for percent computation.
  uint64_t last_cpu_ticks = 0;
  int64_t last_sample_ns = 0;
};

namespace {

std::string Errno(int err) {
  return std::strerror(err);
}

int PidfdOpen(int pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

// Resolves the command like a shell would: paths with '/' relative to the task dir,
// bare names through PATH.
absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           const std::map<std::string, std::string>& env,
                                           const std::string& task_dir) {
  namespace fs = std::filesystem;
  if (command.find('/') != std::string::npos) {
    fs::path p(command);
    if (p.is_relative()) {
      p = fs::path(task_dir) / p;
    }
    return p.string();
  }
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  if (auto it = env.find("PATH"); it != env.end()) {
    path = it->second;
  }
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) {
      continue;
    }
    const fs::path candidate = fs::path(dir) / command;
    if (access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) {
      return candidate.string();
    }
  }
  return absl::NotFoundError("executable file \"" + command + "\" not found in $PATH");
}

struct ProcStat {
  uint64_t utime = 0;
  uint64_t stime = 0;
  uint64_t start_ticks = 0;
  uint64_t rss_pages = 0;
};

std::optional<ProcStat> ReadProcStat(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!std::getline(in, content)) {
    return std::nullopt;
  }
  // Field 2 (comm) may contain spaces; everything after the last ')' is regular.
  const size_t close = content.rfind(')');
  if (close == std::string::npos) {
    return std::nullopt;
  }
  std::istringstream rest(content.substr(close + 2));
  std::vector<std::string> f;
  std::string tok;
  while (rest >> tok) {
    f.push_back(tok);
  }
  // rest starts at field 3 (state): field N is f[N-3].
  if (f.size() < 22) {
    return std::nullopt;
  }
  ProcStat s;
  s.utime = std::stoull(f[14 - 3]);
  s.stime = std::stoull(f[15 - 3]);
  s.start_ticks = std::stoull(f[22 - 3]);
  s.rss_pages = std::stoull(f[24 - 3]);
  return s;
}

}  // namespace

RawExecDriver::RawExecDriver(asio::any_io_executor executor, common::Clock& clock)
    : executor_(std::move(executor)), clock_(clock) {}

RawExecDriver::~RawExecDriver() = default;

uint64_t RawExecDriver::ProcessStartTicks(int pid) {
  auto s = ReadProcStat(pid);
  return s ? s->start_ticks : 0;
}

Capabilities RawExecDriver::GetCapabilities() const {
  return Capabilities{.send_signals = true, .exec = false, .fs_isolation = "none"};
}

DriverFingerprint RawExecDriver::Fingerprint() const {
  return DriverFingerprint{.detected = true,
                           .healthy = true,
                           .health_description = "Healthy",
                           .attributes = {{"driver.raw_exec", "true"}}};
}

RawExecDriver::Task* RawExecDriver::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : it->second.get();
}

asio::awaitable<absl::StatusOr<TaskHandle>> RawExecDriver::StartTask(const TaskConfig& config) {
  if (tasks_.contains(config.id)) {
    co_return absl::AlreadyExistsError("task with ID '" + config.id + "' already started");
  }
  const model::Value* command_v = config.config.Find("command");
  if (command_v == nullptr || command_v->as_string() == nullptr ||
      command_v->as_string()->empty()) {
    co_return absl::InvalidArgumentError("missing required driver config \"command\"");
  }
  std::vector<std::string> argv_s;
  auto resolved = ResolveCommand(*command_v->as_string(), config.env, config.task_dir);
  if (!resolved.ok()) {
    co_return absl::Status(resolved.status().code(), "failed to launch command with executor: " +
                                                         std::string(resolved.status().message()));
  }
  argv_s.push_back(*resolved);
  if (const model::Value* args = config.config.Find("args"); args != nullptr && !args->is_null()) {
    if (args->as_array() == nullptr) {
      co_return absl::InvalidArgumentError("driver config \"args\" must be a list of strings");
    }
    for (const model::Value& a : *args->as_array()) {
      if (a.as_string() == nullptr) {
        co_return absl::InvalidArgumentError("driver config \"args\" must be a list of strings");
      }
      argv_s.push_back(*a.as_string());
    }
  }
  std::vector<std::string> env_s;
  for (const auto& [k, v] : config.env) {
    env_s.push_back(k + "=" + v);
  }
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  auto open_log = [](const std::string& path) -> int {
    if (path.empty()) {
      return open("/dev/null", O_WRONLY | O_CLOEXEC);
    }
    return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  };
  const int out_fd = open_log(config.stdout_path);
  const int err_fd = open_log(config.stderr_path);
  if (out_fd < 0 || err_fd < 0) {
    const int err = errno;
    if (out_fd >= 0)
      close(out_fd);
    if (err_fd >= 0)
      close(err_fd);
    co_return absl::InternalError("failed to open task log files: " + Errno(err));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  // Nothing else of the agent's (its listening socket, connections, pidfds) leaks into
  // the task, which may outlive the agent.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!config.task_dir.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, config.task_dir.c_str());
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t no_signals, all_signals;
  sigemptyset(&no_signals);
  sigfillset(&all_signals);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setsigdefault(&attr, &all_signals);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_fd);
  close(err_fd);
  if (rc != 0) {
    co_return absl::FailedPreconditionError("failed to launch command with executor: exec \"" +
                                            argv_s[0] + "\": " + Errno(rc));
  }
  const int pidfd = PidfdOpen(pid);
  if (pidfd < 0) {
    const int err = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    co_return absl::InternalError("pidfd_open failed: " + Errno(err));
  }

  auto task = std::make_unique<Task>();
  task->handle = TaskHandle{.version = 1,
                            .driver = Name(),
                            .task_id = config.id,
                            .pid = pid,
                            .started_at = common::ToUnixNanos(clock_.Now()),
                            .proc_start_ticks = ProcessStartTicks(pid)};
  task->pidfd = std::make_unique<asio::posix::stream_descriptor>(executor_, pidfd);
  task->exited = std::make_unique<common::Event>(executor_);
  task->started_at = clock_.Now();
  Task* raw = task.get();
  tasks_[config.id] = std::move(task);
  asio::co_spawn(executor_, WatchExit(raw), asio::detached);
  DROVER_LOG_DEBUG("raw_exec: started task {} as pid {}", config.id, pid);
  co_return raw->handle;
}

asio::awaitable<void> RawExecDriver::WatchExit(Task* task) {
  // The Task outlives this coroutine: DestroyTask only erases tasks that have exited
  // (or kills them first and erases after the exit is observed, see DestroyTask).
  auto [ec] = co_await task->pidfd->async_wait(asio::posix::stream_descriptor::wait_read,
                                               asio::as_tuple(asio::use_awaitable));
  if (ec == asio::error::operation_aborted) {
    co_return;  // the driver is going away; the task is not ours to reap any more
  }
  ExitResult result;
  if (task->is_child) {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(task->handle.pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
      result.exit_code = -1;
      result.err = "waitpid failed: " + Errno(errno);
    } else if (WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      result.signal = WTERMSIG(status);
      result.exit_code = 128 + result.signal;
    }
  } else {
    result.exit_code = -1;
    result.err = "exit status unknown: the task was re-attached after an agent restart";
  }
  task->result = result;
  task->completed_at = clock_.Now();
  task->pidfd->close();
  task->exited->Set();
}

absl::Status RawExecDriver::RecoverTask(const TaskHandle& handle) {
  if (tasks_.contains(handle.task_id)) {
    return absl::OkStatus();
  }
  if (handle.pid <= 0 || ProcessStartTicks(handle.pid) != handle.proc_start_ticks ||
      handle.proc_start_ticks == 0) {
    return absl::NotFoundError("task '" + handle.task_id + "' (pid " + std::to_string(handle.pid) +
                               ") is no longer running");
  }
  const int pidfd = PidfdOpen(handle.pid);
  if (pidfd < 0) {
    return absl::NotFoundError("pidfd_open(" + std::to_string(handle.pid) + "): " + Errno(errno));
  }
  auto task = std::make_unique<Task>();
  task->handle = handle;
  task->is_child = false;
  task->pidfd = std::make_unique<asio::posix::stream_descriptor>(executor_, pidfd);
  task->exited = std::make_unique<common::Event>(executor_);
  task->started_at = common::FromUnixNanos(handle.started_at);
  Task* raw = task.get();
  tasks_[handle.task_id] = std::move(task);
  asio::co_spawn(executor_, WatchExit(raw), asio::detached);
  return absl::OkStatus();
}

asio::awaitable<absl::StatusOr<ExitResult>> RawExecDriver::WaitTask(const std::string& task_id) {
  Task* task = Find(task_id);
  if (task == nullptr) {
    co_return absl::NotFoundError("task not found for given id");
  }
  co_await task->exited->Wait();
  co_return *task->result;
}

asio::awaitable<absl::Status> RawExecDriver::StopTask(const std::string& task_id, Duration timeout,
                                                      const std::string& signal) {
  Task* task = Find(task_id);
  if (task == nullptr) {
    co_return absl::NotFoundError("task not found for given id");
  }
  if (task->exited->IsSet()) {
    co_return absl::OkStatus();
  }
  int sig = SIGINT;
  if (!signal.empty()) {
    auto parsed = ParseSignal(signal);
    if (!parsed.ok()) {
      co_return parsed.status();
    }
    sig = *parsed;
  }
  const int pid = task->handle.pid;
  if (kill(-pid, sig) != 0) {
    kill(pid, sig);
  }
  co_await (task->exited->Wait() || clock_.Sleep(timeout));
  if (!task->exited->IsSet()) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    co_await task->exited->Wait();
  }
  // Reap leftovers of the process group (grandchildren that outlived the leader).
  kill(-pid, SIGKILL);
  co_return absl::OkStatus();
}

absl::Status RawExecDriver::DestroyTask(const std::string& task_id, bool force) {
  Task* task = Find(task_id);
  if (task == nullptr) {
    return absl::OkStatus();
  }
  if (!task->exited->IsSet()) {
    if (!force) {
      return absl::FailedPreconditionError("cannot destroy running task '" + task_id + "'");
    }
    kill(-task->handle.pid, SIGKILL);
    kill(task->handle.pid, SIGKILL);
    // The exit watcher still references the task: hand ownership to a coroutine that
    // waits for the exit and then frees it.
    auto owned = std::move(tasks_[task_id]);
    tasks_.erase(task_id);
    asio::co_spawn(
        executor_,
        [owned = std::move(owned)]() mutable -> asio::awaitable<void> {
          co_await owned->exited->Wait();
        },
        asio::detached);
    return absl::OkStatus();
  }
  tasks_.erase(task_id);
  return absl::OkStatus();
}

absl::StatusOr<TaskStatus> RawExecDriver::InspectTask(const std::string& task_id) const {
  const Task* task = Find(task_id);
  if (task == nullptr) {
    return absl::NotFoundError("task not found for given id");
  }
  TaskStatus st;
  st.id = task_id;
  st.state = task->exited->IsSet() ? TaskRunState::kExited : TaskRunState::kRunning;
  st.started_at = task->started_at;
  st.completed_at = task->completed_at;
  st.exit_result = task->result;
  st.driver_attributes["pid"] = std::to_string(task->handle.pid);
  return st;
}

absl::StatusOr<TaskResourceUsage> RawExecDriver::TaskStats(const std::string& task_id) {
  Task* task = Find(task_id);
  if (task == nullptr) {
    return absl::NotFoundError("task not found for given id");
  }
  TaskResourceUsage usage;
  usage.timestamp = common::ToUnixNanos(clock_.Now());
  usage.memory.measured = {"RSS"};
  usage.cpu.measured = {"System Mode", "User Mode", "Percent"};
  auto stat = ReadProcStat(task->handle.pid);
  if (!stat) {
    return usage;
  }
  static const long kTicks = sysconf(_SC_CLK_TCK);
  static const long kPage = sysconf(_SC_PAGESIZE);
  usage.memory.rss = stat->rss_pages * static_cast<uint64_t>(kPage);
  const uint64_t ticks = stat->utime + stat->stime;
  if (task->last_sample_ns != 0 && usage.timestamp > task->last_sample_ns) {
    const double cpu_s = static_cast<double>(ticks - task->last_cpu_ticks) / kTicks;
    const double wall_s = static_cast<double>(usage.timestamp - task->last_sample_ns) / 1e9;
    usage.cpu.percent = 100.0 * cpu_s / wall_s;
  }
  usage.cpu.user_mode = static_cast<double>(stat->utime) / kTicks;
  usage.cpu.system_mode = static_cast<double>(stat->stime) / kTicks;
  task->last_cpu_ticks = ticks;
  task->last_sample_ns = usage.timestamp;
  return usage;
}

absl::Status RawExecDriver::SignalTask(const std::string& task_id, const std::string& signal) {
  Task* task = Find(task_id);
  if (task == nullptr) {
    return absl::NotFoundError("task not found for given id");
  }
  auto sig = ParseSignal(signal);
  if (!sig.ok()) {
    return sig.status();
  }
  if (task->exited->IsSet()) {
    return absl::FailedPreconditionError("task is not running");
  }
  if (kill(task->handle.pid, *sig) != 0) {
    return absl::InternalError("failed to signal task: " + Errno(errno));
  }
  return absl::OkStatus();
}

}  // namespace drover::drivers
