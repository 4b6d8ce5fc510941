// The docker driver's running tasks: the watcher that waits for a container's exit, the
// follower that copies its output, stops, signals, stats, and removal.
#include "drivers/docker/docker_task.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "codec/json.h"
#include "common/logging.h"
#include "common/offload.h"
#include "drivers/docker/container_spec.h"
#include "drivers/docker/stats.h"

namespace drover::drivers::docker {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// How long a task's exit waits for the rest of its output to be written.
constexpr common::Duration kDrainLogs = std::chrono::seconds(5);
// How long StopTask waits for the daemon to report the exit after SIGKILL.
constexpr common::Duration kKillWait = std::chrono::seconds(30);
constexpr common::Duration kMaxBackoff = std::chrono::seconds(10);
// The largest state file read back.
constexpr size_t kMaxStateBytes = 64 << 10;

common::Duration Backoff(common::Duration d) {
  return std::min(kMaxBackoff, d * 2);
}

}  // namespace

std::string EncodeTaskState(const TaskState& s) {
  const codec::Json j = {{"TaskID", s.task_id},
                         {"Container", s.container},
                         {"Image", s.image_id},
                         {"Logs",
                          {{"Dir", s.logs.dir},
                           {"StdoutBase", s.logs.stdout_base},
                           {"StderrBase", s.logs.stderr_base},
                           {"MaxFiles", s.logs.max_files},
                           {"MaxFileSize", s.logs.max_file_size}}},
                         {"Cursor", {{"Time", s.cursor.time}, {"Count", s.cursor.count}}},
                         {"Pins", s.pins}};
  return codec::Dump(j);
}

absl::StatusOr<TaskState> DecodeTaskState(std::string_view text) {
  absl::StatusOr<codec::Json> j = codec::ParseJson(text);
  if (!j.ok())
    return j.status();
  TaskState s;
  try {
    s.task_id = j->at("TaskID").get<std::string>();
    s.container = j->at("Container").get<std::string>();
    s.image_id = j->value("Image", std::string());
    s.pins = j->value("Pins", std::string());
    const codec::Json& logs = j->at("Logs");
    s.logs.dir = logs.at("Dir").get<std::string>();
    s.logs.stdout_base = logs.at("StdoutBase").get<std::string>();
    s.logs.stderr_base = logs.at("StderrBase").get<std::string>();
    s.logs.max_files = logs.at("MaxFiles").get<int>();
    s.logs.max_file_size = logs.at("MaxFileSize").get<int64_t>();
    s.cursor.time = j->at("Cursor").at("Time").get<int64_t>();
    s.cursor.count = j->at("Cursor").at("Count").get<int64_t>();
  } catch (const codec::Json::exception& e) {
    return absl::DataLossError(std::string("docker task state: ") + e.what());
  }
  return s;
}

absl::Status WriteTaskState(const std::filesystem::path& path, const TaskState& state) {
  const std::string text = EncodeTaskState(state);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      return absl::InternalError("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return absl::InternalError("cannot rename " + tmp.string() + ": " + ec.message());
  return absl::OkStatus();
}

absl::StatusOr<TaskState> ReadTaskState(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError("no " + path.string());
  std::string text(kMaxStateBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxStateBytes)
    return absl::DataLossError(path.string() + " is too large");
  return DecodeTaskState(text);
}

asio::awaitable<void> DockerDriver::Watch(std::shared_ptr<Task> task) {
  const std::string id = task->state.container;
  common::Duration backoff = std::chrono::milliseconds(500);
  std::optional<ExitResult> result;
  while (!result) {
    auto wait = engine_.WaitContainer(id);
    auto waited = co_await (std::move(wait) || task->scope->Wait());
    if (waited.index() == 1)
      break;  // destroyed, or the agent is stopping
    absl::StatusOr<int> code = std::get<0>(std::move(waited));
    if (absl::IsNotFound(code.status())) {
      result = ExitResult{.exit_code = -1, .err = "container " + id + " was removed"};
      break;
    }
    if (!code.ok()) {
      // The daemon went away: the container may well still run. Ask again later.
      DROVER_LOG_DEBUG("docker: waiting for {}: {}", id, code.status().ToString());
      auto slept = co_await (clock_.Sleep(backoff) || task->scope->Wait());
      if (slept.index() == 1)
        break;
      backoff = Backoff(backoff);
      continue;
    }
    auto inspect = engine_.InspectContainer(id);
    absl::StatusOr<Engine::ContainerState> state = co_await std::move(inspect);
    if (!state.ok()) {
      result = ExitResult{.exit_code = *code};
    } else if (state->running) {
      // A wait that ended early (the daemon restarting): wait again, not in a tight loop.
      auto slept = co_await (clock_.Sleep(backoff) || task->scope->Wait());
      if (slept.index() == 1)
        break;
      backoff = Backoff(backoff);
    } else {
      result = ExitResult{.exit_code = state->exit_code,
                          .oom_killed = state->oom_killed,
                          .err = state->oom_killed ? "OOM Killed" : state->error};
    }
  }
  if (!result) {
    // No longer watched (destroyed, or the driver stops): waiters are not left hanging.
    task->result = ExitResult{.exit_code = -1, .err = "docker: the container is no longer watched"};
    task->completed_at = clock_.Now();
    task->exited.Set();
    co_return;
  }
  // The output written before the exit is reported, within reason.
  co_await (task->logs_done.Wait() || clock_.Sleep(kDrainLogs) || task->scope->Wait());
  task->result = std::move(result);
  task->completed_at = clock_.Now();
  task->exited.Set();
}

asio::awaitable<void> DockerDriver::Follow(std::shared_ptr<Task> task) {
  if (task->state.logs.dir.empty()) {
    task->logs_done.Set();
    co_return;
  }
  common::Duration backoff = std::chrono::milliseconds(500);
  while (true) {
    auto written = [this, task](LogCursor cursor) {
      task->state.cursor = cursor;
      if (task->removed)
        return;
      if (task->saving) {
        task->save_again = true;
      } else {
        task->saving = true;
        Spawn(SaveState(task), "docker state " + task->state.task_id);
      }
    };
    auto follow = FollowLogs(engine_, task->state.container, task->state.logs, task->state.cursor,
                             pool_, written);
    auto r = co_await (std::move(follow) || task->scope->Wait());
    if (r.index() == 1)
      co_return;
    const absl::Status s = std::get<0>(r);
    if (s.ok() || absl::IsNotFound(s))
      break;
    DROVER_LOG_DEBUG("docker: logs of {}: {}", task->state.container, s.ToString());
    auto slept = co_await (clock_.Sleep(backoff) || task->scope->Wait());
    if (slept.index() == 1)
      co_return;
    backoff = Backoff(backoff);
  }
  task->logs_done.Set();
}

asio::awaitable<void> DockerDriver::SaveState(std::shared_ptr<Task> task) {
  const std::filesystem::path path = StatePath(task->state.task_id);
  do {
    if (task->removed)
      break;
    task->save_again = false;
    auto write = [path, state = task->state] { return WriteTaskState(path, state); };
    if (absl::Status s = co_await common::Offload(pool_, std::move(write)); !s.ok())
      DROVER_LOG_WARN("docker: {}", s.ToString());
  } while (task->save_again && !task->scope->cancelled());
  task->saving = false;
  task->saved.Notify();
}

asio::awaitable<absl::StatusOr<ExitResult>> DockerDriver::WaitTask(const std::string& task_id) {
  std::shared_ptr<Task> task = Find(task_id);
  if (task == nullptr)
    co_return absl::NotFoundError("task not found for given id");
  co_await task->exited.Wait();
  co_return *task->result;
}

asio::awaitable<absl::Status> DockerDriver::StopTask(const std::string& task_id, Duration timeout,
                                                     const std::string& signal) {
  std::shared_ptr<Task> task = Find(task_id);
  if (task == nullptr)
    co_return absl::NotFoundError("task not found for given id");
  if (task->exited.IsSet())
    co_return absl::OkStatus();
  const std::string id = task->state.container;
  if (signal.empty()) {
    // Docker's own stop, as Nomad: the image's STOPSIGNAL, SIGKILL after the timeout.
    if (absl::Status s = co_await engine_.StopContainer(id, timeout); !s.ok())
      DROVER_LOG_DEBUG("docker: stop {}: {}", id, s.ToString());
    auto stopped = co_await (task->exited.Wait() || clock_.Sleep(kKillWait));
    if (stopped.index() == 0)
      co_return absl::OkStatus();
    // The daemon did not stop it (or is away): signal it ourselves below.
  }
  absl::StatusOr<int> sig = ParseSignal(signal.empty() ? "SIGTERM" : signal);
  if (!sig.ok())
    co_return sig.status();
  std::string name = SignalName(*sig);
  if (absl::Status s = co_await engine_.SignalContainer(id, name); !s.ok())
    DROVER_LOG_DEBUG("docker: {} to {}: {}", name, id, s.ToString());
  auto stopped = co_await (task->exited.Wait() || clock_.Sleep(timeout));
  if (stopped.index() == 0)
    co_return absl::OkStatus();
  std::string kill = "SIGKILL";
  if (absl::Status s = co_await engine_.SignalContainer(id, kill); !s.ok())
    DROVER_LOG_DEBUG("docker: SIGKILL to {}: {}", id, s.ToString());
  auto killed = co_await (task->exited.Wait() || clock_.Sleep(kKillWait));
  if (killed.index() == 1)
    co_return absl::DeadlineExceededError("docker: container " + id + " did not stop");
  co_return absl::OkStatus();
}

absl::Status DockerDriver::DestroyTask(const std::string& task_id, bool force) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end())
    return absl::OkStatus();
  std::shared_ptr<Task> task = it->second;
  if (!task->exited.IsSet() && !force)
    return absl::FailedPreconditionError("cannot destroy running task '" + task_id + "'");
  tasks_.erase(it);
  task->scope->Cancel();
  Spawn(Remove(task), "docker remove " + task_id);
  return absl::OkStatus();
}

asio::awaitable<void> DockerDriver::Remove(std::shared_ptr<Task> task) {
  task->removed = true;
  const std::string id = task->state.container;
  if (config_.gc_container) {
    // Forced: a running container (a forced destroy) is killed first.
    if (absl::Status s = co_await engine_.RemoveContainer(id, true);
        !s.ok() && !absl::IsNotFound(s)) {
      DROVER_LOG_WARN("docker: cannot remove container {}: {}", id, s.ToString());
    }
  } else if (!task->exited.IsSet()) {
    std::string kill = "SIGKILL";
    (void)co_await engine_.SignalContainer(id, kill);
  }
  // A state write still under way would bring the file back.
  while (task->saving)
    co_await task->saved.Wait();
  const std::filesystem::path path = StatePath(task->state.task_id);
  auto remove = [path, pins = task->state.pins] {
    if (!pins.empty()) {
      if (absl::Status s = UnpinBindSources(pins); !s.ok())
        DROVER_LOG_WARN("docker: {}", s.ToString());
    }
    std::error_code ec;
    std::filesystem::remove(path, ec);
  };
  co_await common::Offload(pool_, std::move(remove));
  ReleaseImage(task->state.image_id);
}

absl::StatusOr<TaskStatus> DockerDriver::InspectTask(const std::string& task_id) const {
  std::shared_ptr<Task> task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  TaskStatus status;
  status.id = task_id;
  status.name = task->name;
  status.state = task->exited.IsSet() ? TaskRunState::kExited : TaskRunState::kRunning;
  status.started_at = task->started_at;
  status.completed_at = task->completed_at;
  status.exit_result = task->result;
  status.driver_attributes = {{"container_id", task->state.container}};
  return status;
}

absl::StatusOr<TaskResourceUsage> DockerDriver::TaskStats(const std::string& task_id) {
  std::shared_ptr<Task> task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  if (!task->sampling && !task->exited.IsSet()) {
    task->sampling = true;
    Spawn(RefreshStats(task), "docker stats " + task_id);
  }
  if (!task->usage)
    return absl::NotFoundError("no stats of task " + task_id + " yet");
  return *task->usage;
}

asio::awaitable<void> DockerDriver::RefreshStats(std::shared_ptr<Task> task) {
  std::string method = "GET", path = "/containers/" + task->state.container + "/stats?stream=false",
              none;
  auto call = engine_.Call(method, path, none, std::chrono::seconds(10), 1 << 20);
  auto r = co_await (std::move(call) || task->scope->Wait());
  task->sampling = false;
  if (r.index() == 1)
    co_return;
  const absl::StatusOr<Engine::Reply>& reply = std::get<0>(r);
  if (!reply.ok() || reply->status != 200)
    co_return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  absl::StatusOr<TaskResourceUsage> usage =
      UsageFromStats(reply->body, cores, common::ToUnixNanos(clock_.Now()));
  if (usage.ok())
    task->usage = *std::move(usage);
}

absl::Status DockerDriver::SignalTask(const std::string& task_id, const std::string& signal) {
  std::shared_ptr<Task> task = Find(task_id);
  if (task == nullptr)
    return absl::NotFoundError("task not found for given id");
  absl::StatusOr<int> sig = ParseSignal(signal);
  if (!sig.ok())
    return sig.status();
  if (task->exited.IsSet())
    return absl::FailedPreconditionError("task " + task_id + " is not running");
  Spawn(Signal(task, SignalName(*sig)), "docker signal " + task_id);
  return absl::OkStatus();
}

asio::awaitable<void> DockerDriver::Signal(std::shared_ptr<Task> task, std::string signal) {
  if (absl::Status s = co_await engine_.SignalContainer(task->state.container, signal); !s.ok())
    DROVER_LOG_WARN("docker: {} to {}: {}", signal, task->state.container, s.ToString());
}

}  // namespace drover::drivers::docker
