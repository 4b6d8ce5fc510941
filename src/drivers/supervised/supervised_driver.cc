#include "drivers/supervised/supervised_driver.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::drivers {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {
// Calls that only failed because no supervisor could be reached are retried this often.
constexpr int kMaxRetries = 60;
constexpr auto kRetryDelay = std::chrono::seconds(1);
}  // namespace

ExitResult ToExitResult(const supervisor::ExitStatus& exit) {
  ExitResult r;
  if (exit.unknown) {
    r.exit_code = -1;
    r.err = "exit status unknown: the task ended while no supervisor was watching it";
    return r;
  }
  r.signal = exit.signal;
  // As a shell reports it (and Nomad's executor): 128 + the signal that ended it.
  r.exit_code = exit.signal != 0 ? 128 + exit.signal : exit.exit_code;
  r.oom_killed = exit.oom_killed;
  if (r.oom_killed)
    r.err = "OOM Killed";  // as Nomad's docker driver says it: shown in the Terminated event
  return r;
}

absl::StatusOr<std::vector<std::string>> CommandArgv(const model::Value& config) {
  const model::Value* command = config.Find("command");
  if (command == nullptr || command->as_string() == nullptr || command->as_string()->empty())
    return absl::InvalidArgumentError("missing required driver config \"command\"");
  std::vector<std::string> argv = {*command->as_string()};
  if (const model::Value* args = config.Find("args"); args != nullptr && !args->is_null()) {
    if (args->as_array() == nullptr)
      return absl::InvalidArgumentError("driver config \"args\" must be a list of strings");
    for (const model::Value& a : *args->as_array()) {
      if (a.as_string() == nullptr)
        return absl::InvalidArgumentError("driver config \"args\" must be a list of strings");
      argv.push_back(*a.as_string());
    }
  }
  return argv;
}

supervisor::LogSpec ToLogSpec(const TaskLogConfig& logs) {
  return supervisor::LogSpec{.dir = logs.dir,
                             .stdout_base = logs.stdout_base,
                             .stderr_base = logs.stderr_base,
                             .max_files = logs.max_files,
                             .max_file_size = logs.max_file_size};
}

SupervisedDriver::SupervisedDriver(asio::any_io_executor executor, common::Clock& clock,
                                   SupervisorLink& link)
    : executor_(std::move(executor)), clock_(clock), link_(link) {
  subscription_ = link_.Subscribe([this](const supervisor::TaskInfo& info) { OnExit(info); });
}

SupervisedDriver::~SupervisedDriver() {
  *alive_ = false;
  link_.Unsubscribe(subscription_);
}

void SupervisedDriver::CpuPercents(Task::CpuSample now, Task::CpuSample* last, int64_t last_ns,
                                   int64_t now_ns, CpuUsage& out) {
  if (last_ns != 0 && now_ns > last_ns) {
    const double wall = static_cast<double>(now_ns - last_ns) / 1e9;
    out.user_mode = std::max(0.0, 100.0 * (now.user - last->user) / wall);
    out.system_mode = std::max(0.0, 100.0 * (now.system - last->system) / wall);
    out.percent = out.user_mode + out.system_mode;
  }
  *last = now;
}

SupervisedDriver::Task::~Task() {
  for (int fd : held_fifos)
    close(fd);
}

DriverFingerprint SupervisedDriver::Fingerprint() const {
  DriverFingerprint fp;
  fp.detected = true;
  fp.healthy = link_.health().ok();
  fp.health_description =
      fp.healthy ? "Healthy" : "supervisor unavailable: " + std::string(link_.health().message());
  fp.attributes["driver." + Name()] = "true";
  return fp;
}

SupervisedDriver::Task* SupervisedDriver::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : it->second.get();
}

SupervisedDriver::Task* SupervisedDriver::Register(const TaskHandle& handle,
                                                   const supervisor::TaskInfo& info) {
  auto task = std::make_unique<Task>();
  task->handle = handle;
  task->exited = common::CancellationScope::Create(executor_);
  task->started_at = common::FromUnixNanos(handle.started_at);
  for (const std::string& fifo : {info.stdout_fifo, info.stderr_fifo}) {
    if (fifo.empty())
      continue;
    const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0)
      task->held_fifos.push_back(fd);
  }
  Task* raw = task.get();
  tasks_[handle.task_id] = std::move(task);
  // The exit may already be known (an exit event can overtake the spawn's answer, and
  // a recovered task may have ended while the agent was away).
  if (const supervisor::TaskInfo* info = link_.Find(handle.task_id);
      info != nullptr && !info->running) {
    OnExit(*info);
  }
  return raw;
}

void SupervisedDriver::OnExit(const supervisor::TaskInfo& info) {
  Task* task = Find(info.task_id);
  if (task == nullptr) {
    auto it = dying_.find(info.task_id);
    task = it == dying_.end() ? nullptr : it->second.get();
  }
  if (task == nullptr || task->exited->cancelled())
    return;
  task->result = ToExitResult(info.exit.value_or(supervisor::ExitStatus{.unknown = true}));
  task->completed_at = info.exit && info.exit->time_ns != 0
                           ? common::FromUnixNanos(info.exit->time_ns)
                           : clock_.Now();
  task->exited->Cancel();
}

absl::Status SupervisedDriver::RecoverTask(const TaskHandle& handle) {
  if (tasks_.contains(handle.task_id))
    return absl::OkStatus();
  const supervisor::TaskInfo* info = link_.Find(handle.task_id);
  if (info == nullptr) {
    return absl::NotFoundError("the supervisor does not hold task '" + handle.task_id + "'" +
                               (link_.health().ok() ? "" : ": " + link_.health().ToString()));
  }
  // pid and start time together: a reused pid is not our task.
  if (info->pid != handle.pid || info->start_ticks != handle.proc_start_ticks) {
    return absl::NotFoundError("task '" + handle.task_id + "' is pid " + std::to_string(info->pid) +
                               " at the supervisor, not the recorded pid " +
                               std::to_string(handle.pid));
  }
  Register(handle, *info);
  return absl::OkStatus();
}

std::optional<TaskHandle> SupervisedDriver::FindUnrecorded(const std::string& id_prefix,
                                                           int64_t exited_after) {
  for (const std::string& id : link_.TaskIds()) {
    if (!id.starts_with(id_prefix) || tasks_.contains(id) || dying_.contains(id))
      continue;
    const supervisor::TaskInfo* info = link_.Find(id);
    if (info == nullptr)
      continue;
    if (!info->running && info->exit && info->exit->time_ns != 0 &&
        info->exit->time_ns <= exited_after)
      continue;  // the caller's last recorded run, not yet forgotten by the supervisor
    return TaskHandle{.version = 1,
                      .driver = Name(),
                      .task_id = id,
                      .pid = info->pid,
                      .started_at = common::ToUnixNanos(clock_.Now()),
                      .proc_start_ticks = info->start_ticks};
  }
  return std::nullopt;
}

asio::awaitable<absl::StatusOr<TaskHandle>> SupervisedDriver::StartTask(const TaskConfig& config) {
  if (tasks_.contains(config.id))
    co_return absl::AlreadyExistsError("task with ID '" + config.id + "' already started");
  auto spec = BuildSpawnSpec(config);
  if (!spec.ok())
    co_return spec.status();
  auto alive = alive_;
  spawning_.insert(config.id);
  auto spawned = co_await link_.Spawn(*spec);
  if (!*alive)
    co_return absl::CancelledError("driver is gone");
  spawning_.erase(config.id);
  if (!spawned.ok()) {
    const std::string msg =
        "failed to launch command with executor: " + std::string(spawned.status().message());
    // No supervisor to talk to is a node problem that may pass; a bad command is not.
    if (absl::IsUnavailable(spawned.status())) {
      if (spawned.status().GetPayload(kSpawnSentPayload).has_value()) {
        // The connection dropped after the request went out, maybe after the supervisor
        // started the task (it records a task before the task may run): once it answers
        // again, adopt what it holds under this id rather than start the task twice.
        std::optional<TaskHandle> adopted = co_await AdoptAfterReconnect(config.id);
        if (!*alive)
          co_return absl::CancelledError("driver is gone");
        if (adopted)
          co_return *adopted;
      }
      co_return RecoverableError(msg);
    }
    co_return absl::FailedPreconditionError(msg);
  }
  const TaskHandle handle{.version = 1,
                          .driver = Name(),
                          .task_id = config.id,
                          .pid = spawned->pid,
                          .started_at = common::ToUnixNanos(clock_.Now()),
                          .proc_start_ticks = spawned->start_ticks};
  Register(handle, *spawned);
  DROVER_LOG_DEBUG("{}: started task {} as pid {}", Name(), config.id, spawned->pid);
  co_return handle;
}

asio::awaitable<absl::StatusOr<ExitResult>> SupervisedDriver::WaitTask(const std::string& task_id) {
  Task* task = Find(task_id);
  if (task == nullptr)
    co_return absl::NotFoundError("task not found for given id");
  // The task may be destroyed while we wait: keep what we need.
  auto alive = alive_;
  co_await task->exited->Wait();
  if (!*alive)
    co_return absl::CancelledError("driver is gone");
  task = Find(task_id);
  if (task == nullptr || !task->result)
    co_return absl::NotFoundError("task not found for given id");
  co_return *task->result;
}

bool SupervisedDriver::CancelOnExit(const std::string& task_id,
                                    const std::shared_ptr<common::CancellationScope>& scope) {
  if (Task* task = Find(task_id))
    task->exited->Adopt(scope);
  else
    scope->Cancel();
  return true;
}

asio::awaitable<absl::Status> SupervisedDriver::StopTask(const std::string& task_id,
                                                         Duration timeout,
                                                         const std::string& signal) {
  Task* task = Find(task_id);
  if (task == nullptr)
    co_return absl::NotFoundError("task not found for given id");
  if (task->exited->cancelled())
    co_return absl::OkStatus();
  const std::string sig = signal.empty() ? "SIGINT" : signal;
  if (auto parsed = ParseSignal(sig); !parsed.ok())
    co_return parsed.status();
  auto alive = alive_;
  // A failed signal (the task exited meanwhile, or the supervisor is being replaced)
  // is not final: the timeout and SIGKILL below still apply.
  absl::Status sent = co_await link_.Signal(task_id, sig, /*group=*/true);
  if (!*alive)
    co_return absl::CancelledError("driver is gone");
  task = Find(task_id);
  if (task == nullptr)
    co_return absl::OkStatus();
  if (!sent.ok())
    DROVER_LOG_DEBUG("{}: {} to {}: {}", Name(), sig, task_id, sent.ToString());
  // Held here: the task may be released while we wait.
  const common::CancellationScopePtr exited = task->exited;
  if (!exited->cancelled())
    co_await (exited->Wait() || clock_.Sleep(timeout));
  if (!*alive)
    co_return absl::CancelledError("driver is gone");
  task = Find(task_id);
  if (task == nullptr || task->exited->cancelled())
    co_return absl::OkStatus();
  const std::string kill = "SIGKILL";  // named: see GCC 12 in docs/development.md
  absl::Status killed = co_await link_.Signal(task_id, kill, /*group=*/true);
  if (!*alive)
    co_return absl::CancelledError("driver is gone");
  task = Find(task_id);
  if (task == nullptr)
    co_return absl::OkStatus();
  if (!killed.ok() && !task->exited->cancelled())
    co_return common::Annotate(killed, "failed to kill task '" + task_id + "'");
  co_await task->exited->Wait();
  co_return absl::OkStatus();
}

absl::Status SupervisedDriver::DestroyTask(const std::string& task_id, bool force) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end())
    return absl::OkStatus();
  if (!it->second->exited->cancelled() && !force)
    return absl::FailedPreconditionError("cannot destroy running task '" + task_id + "'");
  dying_[task_id] = std::move(it->second);
  tasks_.erase(it);
  common::SpawnDetached(executor_, Release(task_id), "release task " + task_id);
  return absl::OkStatus();
}

asio::awaitable<void> SupervisedDriver::Release(std::string task_id) {
  auto alive = alive_;
  // Kill whatever is left of the group: the task itself if it is still running (a
  // forced destroy), and children it left behind.
  const std::string kill = "SIGKILL";  // named: see GCC 12 in docs/development.md
  absl::Status killed = co_await link_.Signal(task_id, kill, /*group=*/true);
  if (!*alive)
    co_return;
  if (!killed.ok())
    DROVER_LOG_DEBUG("{}: final kill of {}: {}", Name(), task_id, killed.ToString());
  auto it = dying_.find(task_id);
  if (it == dying_.end())
    co_return;
  co_await it->second->exited->Wait();
  if (!*alive)
    co_return;
  dying_.erase(task_id);  // closes the held FIFOs
  // Until acknowledged the supervisor keeps the task (and its cgroup): retry while it
  // cannot be reached.
  for (int attempt = 0;; ++attempt) {
    absl::Status acked = co_await link_.AckExit(task_id);
    if (!*alive)
      co_return;
    if (acked.ok())
      break;
    if (!absl::IsUnavailable(acked) || attempt >= kMaxRetries) {
      DROVER_LOG_WARN("{}: failed to acknowledge the exit of {}: {}", Name(), task_id,
                      acked.ToString());
      break;
    }
    co_await clock_.Sleep(kRetryDelay);
    if (!*alive)
      co_return;
  }
  ReleaseTask(task_id);
}

asio::awaitable<std::optional<TaskHandle>> SupervisedDriver::AdoptAfterReconnect(
    std::string task_id) {
  auto alive = alive_;
  for (int attempt = 0; attempt < kMaxRetries; ++attempt) {
    auto found = co_await link_.Lookup(task_id);
    if (!*alive)
      co_return std::nullopt;
    if (found.ok()) {
      if (!*found)
        co_return std::nullopt;  // it never started
      const supervisor::TaskInfo& info = **found;
      const TaskHandle handle{.version = 1,
                              .driver = Name(),
                              .task_id = task_id,
                              .pid = info.pid,
                              .started_at = common::ToUnixNanos(clock_.Now()),
                              .proc_start_ticks = info.start_ticks};
      Register(handle, info);
      DROVER_LOG_INFO("{}: adopted task {} (pid {}), started as the connection dropped", Name(),
                      task_id, info.pid);
      co_return handle;
    }
    if (!absl::IsUnavailable(found.status()))
      break;
    co_await clock_.Sleep(kRetryDelay);
    if (!*alive)
      co_return std::nullopt;
  }
  // Out of tries: whatever it holds under this id must not be left running, unowned.
  common::SpawnDetached(executor_, ReapOrphan(task_id), "reap " + task_id);
  co_return std::nullopt;
}

asio::awaitable<void> SupervisedDriver::ReapOrphan(std::string task_id) {
  auto alive = alive_;
  const std::string kill = "SIGKILL";  // named: see GCC 12 in docs/development.md
  for (int attempt = 0;; ++attempt) {
    absl::Status s = co_await link_.Signal(task_id, kill, /*group=*/true);
    if (!*alive)
      co_return;
    if (s.ok())
      break;  // it was started: now release it like any destroyed task
    if (!absl::IsUnavailable(s) || attempt >= kMaxRetries)
      co_return;  // never started (the supervisor does not know it), or out of tries
    co_await clock_.Sleep(kRetryDelay);
    if (!*alive)
      co_return;
  }
  auto task = std::make_unique<Task>();
  task->handle.task_id = task_id;
  task->exited = common::CancellationScope::Create(executor_);
  dying_[task_id] = std::move(task);
  if (const supervisor::TaskInfo* info = link_.Find(task_id); info != nullptr && !info->running)
    OnExit(*info);
  DROVER_LOG_WARN("{}: killed task {}, which no allocation owns", Name(), task_id);
  co_await Release(task_id);
}

absl::StatusOr<TaskStatus> SupervisedDriver::InspectTask(const std::string& task_id) const {
  const Task* task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  TaskStatus st;
  st.id = task_id;
  st.state = task->exited->cancelled() ? TaskRunState::kExited : TaskRunState::kRunning;
  st.started_at = task->started_at;
  st.completed_at = task->completed_at;
  st.exit_result = task->result;
  st.driver_attributes["pid"] = std::to_string(task->handle.pid);
  return st;
}

absl::Status SupervisedDriver::SignalTask(const std::string& task_id, const std::string& signal) {
  Task* task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  if (auto sig = ParseSignal(signal); !sig.ok())
    return sig.status();
  if (task->exited->cancelled())
    return absl::FailedPreconditionError("task is not running");
  // The task's own process, as Nomad signals it; sent in the background (the
  // supervisor only fails for a task that has just exited).
  common::SpawnDetached(
      executor_,
      [](SupervisorLink& link, std::string id, std::string sig) -> asio::awaitable<void> {
        absl::Status s = co_await link.Signal(id, sig, /*group=*/false);
        if (!s.ok())
          DROVER_LOG_WARN("failed to signal task {}: {}", id, s.ToString());
      }(link_, task_id, signal),
      "signal " + task_id);
  return absl::OkStatus();
}

bool SupervisedDriver::Claims(const std::string& task_id) const {
  return tasks_.contains(task_id) || dying_.contains(task_id) || spawning_.contains(task_id);
}

asio::awaitable<void> SupervisedDriver::ReapUnowned(std::string task_id) {
  const supervisor::TaskInfo* info = link_.Find(task_id);
  if (info == nullptr || Claims(task_id))
    co_return;
  if (info->running) {
    co_await ReapOrphan(task_id);
    co_return;
  }
  if (absl::Status s = co_await link_.AckExit(task_id); !s.ok())
    DROVER_LOG_WARN("{}: failed to acknowledge the exit of unowned task {}: {}", Name(), task_id,
                    s.ToString());
}

asio::awaitable<int> ReapUnownedTasks(SupervisorLink& link,
                                      std::vector<SupervisedDriver*> drivers) {
  if (drivers.empty())
    co_return 0;
  int reaped = 0;
  for (const std::string& id : link.TaskIds()) {
    bool owned = false;
    for (SupervisedDriver* d : drivers)
      owned = owned || d->Claims(id);
    if (owned)
      continue;
    DROVER_LOG_WARN("supervisor: task {} belongs to no allocation this agent knows; killing it",
                    id);
    co_await drivers.front()->ReapUnowned(id);
    ++reaped;
  }
  co_return reaped;
}

}  // namespace drover::drivers
