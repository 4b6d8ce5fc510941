#include "drivers/mock/mock_driver.h"

#include <csignal>
#include <fstream>

#include "common/go_duration.h"
#include "supervisor/file_rotator.h"

namespace drover::drivers {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

struct MockDriver::Task {
  explicit Task(asio::any_io_executor ex)
      : exited(common::CancellationScope::Create(ex)), stop_requested(ex) {}
  TaskHandle handle;
  Duration run_for{0};
  Duration kill_after{0};
  ExitResult planned;
  common::CancellationScopePtr exited;  // cancelled once the task has exited
  common::Event stop_requested;
  std::optional<ExitResult> result;
  Time started_at{};
  Time completed_at{};
  std::vector<std::string> signals;
};

namespace {

absl::StatusOr<Duration> DurationField(const model::Value& config, const std::string& key) {
  const model::Value* v = config.Find(key);
  if (v == nullptr || v->is_null()) {
    return Duration(0);
  }
  if (const auto* s = v->as_string()) {
    auto d = common::ParseGoDuration(*s);
    if (!d.ok()) {
      return absl::InvalidArgumentError("mock driver config \"" + key +
                                        "\": " + std::string(d.status().message()));
    }
    return *d;
  }
  if (const auto* i = std::get_if<int64_t>(&v->storage())) {
    return Duration(*i);
  }
  return absl::InvalidArgumentError("mock driver config \"" + key + "\" must be a duration");
}

int64_t IntField(const model::Value& config, const std::string& key) {
  const model::Value* v = config.Find(key);
  if (v == nullptr) {
    return 0;
  }
  if (const auto* i = std::get_if<int64_t>(&v->storage())) {
    return *i;
  }
  if (const auto* d = std::get_if<double>(&v->storage())) {
    return static_cast<int64_t>(*d);
  }
  return 0;
}

std::string StringField(const model::Value& config, const std::string& key) {
  const model::Value* v = config.Find(key);
  return (v != nullptr && v->as_string() != nullptr) ? *v->as_string() : "";
}

bool BoolField(const model::Value& config, const std::string& key) {
  const model::Value* v = config.Find(key);
  const bool* b = v != nullptr ? std::get_if<bool>(&v->storage()) : nullptr;
  return b != nullptr && *b;
}

}  // namespace

MockDriver::MockDriver(asio::any_io_executor executor, common::Clock& clock)
    : executor_(std::move(executor)), clock_(clock) {}

MockDriver::~MockDriver() = default;

Capabilities MockDriver::GetCapabilities() const {
  return Capabilities{.send_signals = true, .exec = false, .fs_isolation = "none"};
}

DriverFingerprint MockDriver::Fingerprint() const {
  return DriverFingerprint{.detected = true,
                           .healthy = healthy_,
                           .health_description = health_description_,
                           .attributes = {{"driver.mock_driver", "true"}}};
}

std::shared_ptr<MockDriver::Task> MockDriver::Find(const std::string& id) const {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : it->second;
}

absl::Status MockDriver::RecoverTask(const TaskHandle& handle) {
  if (tasks_.contains(handle.task_id)) {
    return absl::OkStatus();
  }
  return absl::NotFoundError("mock task '" + handle.task_id + "' cannot be recovered");
}

asio::awaitable<absl::StatusOr<TaskHandle>> MockDriver::StartTask(const TaskConfig& config) {
  if (tasks_.contains(config.id)) {
    co_return absl::AlreadyExistsError("task with ID '" + config.id + "' already started");
  }
  auto block = DurationField(config.config, "start_block_for");
  if (!block.ok())
    co_return block.status();
  if (block->count() > 0) {
    co_await clock_.Sleep(*block);
  }
  if (std::string err = StringField(config.config, "start_error"); !err.empty()) {
    if (BoolField(config.config, "start_error_recoverable")) {
      co_return RecoverableError(err);
    }
    co_return absl::FailedPreconditionError(err);
  }
  auto task = std::make_shared<Task>(executor_);
  auto run_for = DurationField(config.config, "run_for");
  if (!run_for.ok())
    co_return run_for.status();
  auto kill_after = DurationField(config.config, "kill_after");
  if (!kill_after.ok())
    co_return kill_after.status();
  task->run_for = *run_for;
  task->kill_after = *kill_after;
  task->planned.exit_code = static_cast<int>(IntField(config.config, "exit_code"));
  task->planned.signal = static_cast<int>(IntField(config.config, "exit_signal"));
  task->planned.err = StringField(config.config, "exit_err_msg");
  if (std::string out = StringField(config.config, "stdout_string");
      !out.empty() && !config.logs.dir.empty()) {
    // Into the task's rotated log files, as the supervisor writes real tasks' output.
    auto rotator = supervisor::FileRotator::Open(config.logs.dir, config.logs.stdout_base,
                                                 config.logs.max_files, config.logs.max_file_size);
    if (rotator.ok())
      (void)(*rotator)->Write(out);
  }
  task->handle = TaskHandle{.version = 1,
                            .driver = Name(),
                            .task_id = config.id,
                            .pid = 0,
                            .started_at = common::ToUnixNanos(clock_.Now())};
  task->started_at = clock_.Now();
  tasks_[config.id] = task;
  ++starts_;
  started_configs_.push_back(config);
  asio::co_spawn(executor_, RunTask(task), asio::detached);
  co_return task->handle;
}

asio::awaitable<void> MockDriver::RunTask(std::shared_ptr<Task> task) {
  auto r = co_await (clock_.Sleep(task->run_for) || task->stop_requested.Wait());
  if (r.index() == 0) {
    task->result = task->planned;
  }
  if (!task->result) {
    // Stopped: StopTask filled in the result before setting stop_requested.
    task->result = ExitResult{.exit_code = 0, .signal = SIGINT};
  }
  task->completed_at = clock_.Now();
  task->exited->Cancel();
}

asio::awaitable<absl::StatusOr<ExitResult>> MockDriver::WaitTask(const std::string& task_id) {
  auto task = Find(task_id);
  if (!task) {
    co_return absl::NotFoundError("task not found for given id");
  }
  co_await task->exited->Wait();
  co_return *task->result;
}

bool MockDriver::CancelOnExit(const std::string& task_id,
                              const std::shared_ptr<common::CancellationScope>& scope) {
  if (auto task = Find(task_id))
    task->exited->Adopt(scope);
  else
    scope->Cancel();
  return true;
}

asio::awaitable<absl::Status> MockDriver::StopTask(const std::string& task_id, Duration timeout,
                                                   const std::string& signal) {
  auto task = Find(task_id);
  if (!task) {
    co_return absl::NotFoundError("task not found for given id");
  }
  if (task->exited->cancelled()) {
    co_return absl::OkStatus();
  }
  int sig = SIGINT;
  if (!signal.empty()) {
    auto parsed = ParseSignal(signal);
    if (!parsed.ok())
      co_return parsed.status();
    sig = *parsed;
  }
  if (task->kill_after > timeout) {
    // The task ignores the signal; force-kill once the timeout passes.
    co_await (clock_.Sleep(timeout) || task->exited->Wait());
    sig = SIGKILL;
  } else if (task->kill_after.count() > 0) {
    co_await (clock_.Sleep(task->kill_after) || task->exited->Wait());
  }
  if (!task->exited->cancelled() && !task->result) {
    task->result = ExitResult{.exit_code = 0, .signal = sig};
  }
  task->stop_requested.Set();
  co_await task->exited->Wait();
  co_return absl::OkStatus();
}

absl::Status MockDriver::DestroyTask(const std::string& task_id, bool force) {
  auto task = Find(task_id);
  if (!task) {
    return absl::OkStatus();
  }
  if (!task->exited->cancelled()) {
    if (!force) {
      return absl::FailedPreconditionError("cannot destroy running task '" + task_id + "'");
    }
    task->result = ExitResult{.exit_code = 0, .signal = SIGKILL};
    task->stop_requested.Set();
  }
  tasks_.erase(task_id);
  return absl::OkStatus();
}

absl::StatusOr<TaskStatus> MockDriver::InspectTask(const std::string& task_id) const {
  auto task = Find(task_id);
  if (!task) {
    return absl::NotFoundError("task not found for given id");
  }
  TaskStatus st;
  st.id = task_id;
  st.state = task->exited->cancelled() ? TaskRunState::kExited : TaskRunState::kRunning;
  st.started_at = task->started_at;
  st.completed_at = task->completed_at;
  st.exit_result = task->result;
  return st;
}

absl::StatusOr<TaskResourceUsage> MockDriver::TaskStats(const std::string& task_id) {
  auto task = Find(task_id);
  if (!task) {
    return absl::NotFoundError("task not found for given id");
  }
  TaskResourceUsage usage;
  usage.timestamp = common::ToUnixNanos(clock_.Now());
  usage.memory.measured = {"RSS"};
  usage.cpu.measured = {"Percent"};
  return usage;
}

absl::Status MockDriver::SignalTask(const std::string& task_id, const std::string& signal) {
  auto task = Find(task_id);
  if (!task) {
    return absl::NotFoundError("task not found for given id");
  }
  auto sig = ParseSignal(signal);
  if (!sig.ok()) {
    return sig.status();
  }
  task->signals.push_back(SignalName(*sig));
  return absl::OkStatus();
}

std::vector<std::string> MockDriver::SignalsFor(const std::string& task_id) const {
  auto task = Find(task_id);
  return task ? task->signals : std::vector<std::string>{};
}

}  // namespace drover::drivers
