#include "client/taskrunner/task_runner.h"

#include "common/ids.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::taskrunner {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

const model::Task& FindTask(const model::Allocation& alloc, const std::string& name) {
  const model::TaskGroup* g = alloc.Group();
  DROVER_CHECK(g != nullptr);
  const model::Task* t = g->FindTask(name);
  DROVER_CHECK(t != nullptr);
  return *t;
}

model::RestartPolicy PolicyFor(const model::Allocation& alloc, const model::Task& task) {
  if (task.restart_policy)
    return *task.restart_policy;
  if (const model::TaskGroup* g = alloc.Group(); g && g->restart_policy)
    return *g->restart_policy;
  return model::RestartPolicy{.attempts = 0, .mode = model::kRestartModeFail};
}

}  // namespace

TaskRunner::TaskRunner(asio::any_io_executor executor, TaskRunnerConfig config)
    : executor_(executor),
      config_(std::move(config)),
      alloc_(config_.alloc),
      task_(&FindTask(*alloc_, config_.task_name)),
      tracker_(PolicyFor(*alloc_, *task_), alloc_->job->type, *task_, *config_.clock,
               config_.restart_jitter),
      kill_(common::CancellationScope::Create(executor)),
      stop_current_(kill_->Child()),
      done_(executor) {
  if (!config_.skip_shutdown_delay) {
    config_.skip_shutdown_delay = common::CancellationScope::Create(executor);
  }
  if (auto it = alloc_->task_states.find(task_->name); it != alloc_->task_states.end()) {
    state_ = it->second;
  }
  state_.AppendEvent(model::TaskEvent(model::kEventReceived, Now()));
}

void TaskRunner::UpdateState(const std::string& state, std::optional<model::TaskEvent> event) {
  const std::string prev = state_.state;
  if (event) {
    if (event->type == model::kEventRestarting) {
      ++state_.restarts;
      state_.last_restart = common::FromUnixNanos(event->time);
    }
    state_.AppendEvent(std::move(*event));
  }
  state_.state = state;
  if (state == model::kTaskStateRunning && prev != model::kTaskStateRunning) {
    state_.started_at = Now();
  }
  if (state == model::kTaskStateDead && state_.finished_at == model::Time{}) {
    state_.finished_at = Now();
  }
  if (config_.on_state_change)
    config_.on_state_change();
}

void TaskRunner::EmitEvent(model::TaskEvent event) {
  state_.AppendEvent(std::move(event));
  if (config_.on_state_change)
    config_.on_state_change();
}

asio::awaitable<void> TaskRunner::ShutdownDelay(const std::string& task_id) {
  const common::Duration delay = task_->shutdown_delay;
  if (delay.count() <= 0) {
    co_return;
  }
  if (config_.skip_shutdown_delay->cancelled()) {
    EmitEvent(model::TaskEvent(model::kEventSkippingShutdownDelay, Now())
                  .SetDisplayMessage("Skipping shutdown_delay of " +
                                     model::FormatGoDuration(delay) + " before killing the task."));
    co_return;
  }
  // Unlike Nomad, the task stays "running" while it waits: it is still running.
  EmitEvent(model::TaskEvent(model::kEventWaitingShutdownDelay, Now())
                .SetDisplayMessage("Waiting for shutdown_delay of " +
                                   model::FormatGoDuration(delay) + " before killing the task."));
  auto exited = config_.driver->WaitTask(task_id);
  co_await (config_.clock->Sleep(delay) || std::move(exited) ||
            config_.skip_shutdown_delay->Wait());
}

absl::Status TaskRunner::Restart(model::TaskEvent event, bool failure) {
  if (!handle_ || kill_->cancelled()) {
    return absl::FailedPreconditionError("Task not running");
  }
  if (stop_current_->cancelled()) {
    return absl::OkStatus();  // a restart is already under way
  }
  EmitEvent(std::move(event));
  tracker_.SetRestartTriggered(failure);
  stop_current_->Cancel();
  return absl::OkStatus();
}

void TaskRunner::RequestKill(std::optional<model::TaskEvent> event) {
  if (kill_->cancelled())
    return;
  if (event && state_.finished_at == model::Time{} && state_.state != model::kTaskStateDead) {
    killing_emitted_ = true;
    EmitEvent(std::move(*event));
  }
  kill_->Cancel();
}

void TaskRunner::MarkFailedKill(const std::string& reason) {
  model::TaskEvent ev(model::kEventSetupFailure, Now());
  ev.SetSetupError(reason).SetDisplayMessage(reason).SetFailsTask();
  EmitEvent(std::move(ev));
  kill_->Cancel();
}

common::Duration TaskRunner::KillTimeout() const {
  return std::min(task_->kill_timeout, config_.max_kill_timeout);
}

asio::awaitable<absl::Status> TaskRunner::Prestart() {
  if (config_.driver == nullptr) {
    co_return absl::FailedPreconditionError("driver \"" + task_->driver +
                                            "\" is not available on this node");
  }
  if (!task_dir_) {
    EmitEvent(
        model::TaskEvent(model::kEventTaskSetup, Now()).SetMessage("Building Task Directory"));
  }
  allocdir::AllocDir* ad = config_.alloc_dir;
  const std::string name = task_->name;
  // Named, not a temporary: GCC 12 mis-destroys lambda temporaries in co_await.
  auto work = [ad, name] { return ad->BuildTaskDir(name); };
  auto built = co_await common::Offload(*config_.pool, std::move(work));
  if (!built.ok()) {
    co_return common::Annotate(built.status(), "failed to build task directory");
  }
  task_dir_ = *built;
  TaskEnvInput in;
  in.alloc = alloc_.get();
  in.task = task_;
  in.node = config_.node;
  in.region = config_.region;
  in.alloc_dir = config_.alloc_dir->shared_dir().string();
  in.task_dir = task_dir_->local.string();
  in.secrets_dir = task_dir_->secrets.string();
  in.host_env = config_.host_env;
  env_ = TaskEnv::Build(in);
  co_return absl::OkStatus();
}

drivers::TaskConfig TaskRunner::BuildTaskConfig() {
  drivers::TaskConfig c;
  c.id = alloc_->id + "/" + task_->name + "/" + common::RandomHex(8);
  c.alloc_id = alloc_->id;
  c.job_id = alloc_->job_id;
  c.job_name = alloc_->job->name;
  c.task_group = alloc_->task_group;
  c.name = task_->name;
  c.namespace_ = alloc_->namespace_;
  if (config_.node != nullptr) {
    c.node_id = config_.node->id;
    c.node_name = config_.node->name;
  }
  c.user = task_->user;
  c.env = env_->env();
  c.config = env_->InterpolateValue(task_->config);
  c.alloc_dir = config_.alloc_dir->dir().string();
  c.task_dir = task_dir_->dir.string();
  const auto logs = config_.alloc_dir->logs_dir();
  c.stdout_path = (logs / (task_->name + ".stdout.0")).string();
  c.stderr_path = (logs / (task_->name + ".stderr.0")).string();
  if (auto it = alloc_->allocated_resources.tasks.find(task_->name);
      it != alloc_->allocated_resources.tasks.end()) {
    c.cpu_shares = it->second.cpu_shares;
    c.memory_mb = it->second.memory_mb;
    c.memory_max_mb = it->second.memory_max_mb;
  }
  return c;
}

asio::awaitable<drivers::ExitResult> TaskRunner::WaitOrKill(const std::string& task_id) {
  drivers::Driver& driver = *config_.driver;
  // `stop_current_` is cancelled by a kill (with kill_) or by a user restart (alone).
  auto waited = co_await (driver.WaitTask(task_id) || stop_current_->Wait());
  if (waited.index() == 0) {
    auto& r = std::get<0>(waited);
    if (r.ok())
      co_return *r;
    co_return drivers::ExitResult{.exit_code = -1, .err = std::string(r.status().message())};
  }
  // Killed or restarting: stop with the task's signal, then SIGKILL after the timeout.
  if (kill_->cancelled()) {
    tracker_.SetKilled();
    co_await ShutdownDelay(task_id);
  }
  absl::Status stopped = co_await driver.StopTask(task_id, KillTimeout(), task_->kill_signal);
  if (!stopped.ok() && !absl::IsNotFound(stopped)) {
    // Never leave a task running because the polite stop failed: force it.
    DROVER_LOG_WARN("failed to stop task {}: {}; killing it", task_id, stopped.ToString());
    stopped = co_await driver.StopTask(task_id, common::Duration(0), "SIGKILL");
    if (!stopped.ok() && !absl::IsNotFound(stopped)) {
      DROVER_LOG_ERROR("failed to kill task {}: {}", task_id, stopped.ToString());
      co_return drivers::ExitResult{
          .exit_code = -1, .err = "failed to kill task: " + std::string(stopped.message())};
    }
  }
  auto r = co_await driver.WaitTask(task_id);
  if (r.ok())
    co_return *r;
  co_return drivers::ExitResult{.exit_code = -1, .err = std::string(r.status().message())};
}

asio::awaitable<void> TaskRunner::Run() {
  DROVER_CHECK(!run_called_);
  run_called_ = true;
  try {
    co_await RunLoop();
  } catch (const std::exception& e) {
    // A bug or a third-party exception must not leave the alloc waiting forever.
    DROVER_LOG_ERROR("task {} of alloc {}: runner failed: {}", task_->name, alloc_->id, e.what());
    model::TaskEvent ev(model::kEventHookFailed, Now());
    ev.SetMessage(std::string("task runner failed: ") + e.what()).SetFailsTask();
    UpdateState(model::kTaskStateDead, std::move(ev));
  }
  done_.Set();
}

asio::awaitable<void> TaskRunner::RunLoop() {
  if (config_.on_state_change)
    config_.on_state_change();
  bool killed_event_due = false;
  while (!kill_->cancelled()) {
    if (config_.wait_start) {
      auto gate = config_.wait_start();
      auto opened = co_await (std::move(gate) || kill_->Wait());
      if (opened.index() == 1)
        break;
    }
    absl::Status prestart = co_await Prestart();
    if (kill_->cancelled())
      break;
    if (!prestart.ok()) {
      model::TaskEvent ev(model::kEventHookFailed, Now());
      ev.SetMessage(std::string(prestart.message()))
          .SetDisplayMessage(std::string(prestart.message()));
      EmitEvent(std::move(ev));
      tracker_.SetStartError(prestart);
    } else {
      drivers::TaskConfig cfg = BuildTaskConfig();
      auto started = co_await config_.driver->StartTask(cfg);
      if (!started.ok()) {
        const std::string msg = std::string(started.status().message());
        EmitEvent(model::TaskEvent(model::kEventDriverFailure, Now()).SetDriverError(msg));
        tracker_.SetStartError(started.status());
      } else {
        handle_ = *started;
        UpdateState(model::kTaskStateRunning, model::TaskEvent(model::kEventStarted, Now()));
        const drivers::ExitResult result = co_await WaitOrKill(cfg.id);
        model::TaskEvent term(model::kEventTerminated, Now());
        term.SetExitCode(result.exit_code).SetSignal(result.signal).SetOomKilled(result.oom_killed);
        term.SetExitMessage(result.err);
        EmitEvent(std::move(term));
        if (absl::Status s = config_.driver->DestroyTask(cfg.id, true); !s.ok()) {
          DROVER_LOG_WARN("failed to destroy task {}: {}", cfg.id, s.ToString());
        }
        handle_.reset();
        const bool restarting = stop_current_->cancelled() && !kill_->cancelled();
        if (!kill_->cancelled() && !restarting)
          tracker_.SetExitResult(result);
        stop_current_ = kill_->Child();
      }
    }
    if (kill_->cancelled())
      tracker_.SetKilled();
    const RestartTracker::State decision = tracker_.GetState();
    if (decision.decision == RestartDecision::kKilled) {
      killed_event_due = true;
      break;
    }
    if (decision.decision == RestartDecision::kNotRestarting) {
      model::TaskEvent ev(model::kEventNotRestarting, Now());
      ev.SetRestartReason(decision.reason).SetFailsTask();
      EmitEvent(std::move(ev));
      break;
    }
    if (decision.decision == RestartDecision::kTerminated) {
      break;
    }
    model::TaskEvent ev(model::kEventRestarting, Now());
    ev.SetRestartReason(decision.reason.empty() ? std::string(kReasonWithinPolicy)
                                                : decision.reason)
        .SetStartDelay(decision.delay);
    UpdateState(model::kTaskStatePending, std::move(ev));
    auto slept = co_await (config_.clock->Sleep(decision.delay) || kill_->Wait());
    if (slept.index() == 1) {
      killed_event_due = true;
      break;
    }
  }
  // A task killed before it started (or between starts) still closes its "Killing"
  // with "Killed", so every kill reads the same in the event log.
  if (kill_->cancelled() && killing_emitted_)
    killed_event_due = true;
  if (killed_event_due) {
    UpdateState(model::kTaskStateDead, model::TaskEvent(model::kEventKilled, Now()));
  } else {
    UpdateState(model::kTaskStateDead, std::nullopt);
  }
}

std::optional<drivers::TaskResourceUsage> TaskRunner::LatestStats() {
  if (!handle_ || config_.driver == nullptr)
    return std::nullopt;
  auto s = config_.driver->TaskStats(handle_->task_id);
  if (!s.ok())
    return std::nullopt;
  return *s;
}

absl::Status TaskRunner::Signal(const std::string& signal) {
  if (!handle_)
    return absl::FailedPreconditionError("Task not running");
  return config_.driver->SignalTask(handle_->task_id, signal);
}

}  // namespace drover::taskrunner
