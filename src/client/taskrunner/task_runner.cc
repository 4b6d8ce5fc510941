#include "client/taskrunner/task_runner.h"

#include "client/taskrunner/device_hook.h"
#include "client/taskrunner/dispatch_payload_hook.h"
#include "client/taskrunner/stats_hook.h"
#include "client/taskrunner/task_dir_hook.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::taskrunner {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// Nomad's defaults for a task without a logs block.
constexpr int kDefaultLogMaxFiles = 10;
constexpr int64_t kDefaultLogMaxFileSizeMb = 10;

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
      updates_(executor,
               [](const std::shared_ptr<const model::Allocation>& pending,
                  const std::shared_ptr<const model::Allocation>& incoming) {
                 return pending->alloc_modify_index > incoming->alloc_modify_index;
               }),
      update_loop_idle_(executor),
      restart_parked_(executor),
      shutdown_(common::CancellationScope::Create(executor)),
      kill_(common::CancellationScope::Create(executor)),
      stop_current_(kill_->Child()),
      done_(executor) {
  if (!config_.skip_shutdown_delay) {
    config_.skip_shutdown_delay = common::CancellationScope::Create(executor);
  }
  // Registration order is run order (reference §3.4).
  auto emit = [this](model::TaskEvent ev) { EmitHookEvent(std::move(ev)); };
  hooks_.push_back(std::make_unique<ValidateHook>(config_.validate));
  hooks_.push_back(std::make_unique<TaskDirHook>(
      *config_.pool, emit, config_.driver != nullptr ? config_.driver->DefaultUser() : "",
      config_.driver != nullptr && config_.driver->GetCapabilities().fs_isolation == "image"));
  hooks_.push_back(std::make_unique<DispatchPayloadHook>(*config_.pool));
  hooks_.push_back(std::make_unique<DeviceHook>(config_.reserve_devices));
  if (!config_.stats_sampler) {
    config_.stats_sampler = StatsSampler::Create(executor, *config_.clock, std::chrono::seconds(1));
  }
  hooks_.push_back(std::make_unique<StatsHook>(
      config_.stats_sampler,
      [this](std::optional<drivers::TaskResourceUsage> u) { latest_stats_ = std::move(u); }));
  if (config_.extra_hooks) {
    for (TaskHookPtr& h : config_.extra_hooks())
      hooks_.push_back(std::move(h));
  }
  if (auto it = alloc_->task_states.find(task_->name); it != alloc_->task_states.end()) {
    // The servers' view: its history (events, restart count) carries on, but this
    // runner has started nothing yet (a client that lost its state DB gets allocations
    // the servers know as running): the task is pending until it starts. Restore()
    // replaces all of this with what the client itself recorded.
    state_ = it->second;
    state_.state = model::kTaskStatePending;
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

absl::Status TaskRunner::ForceRestart(model::TaskEvent event, bool failure) {
  if (!parked_) {
    return Restart(std::move(event), failure);
  }
  if (kill_->cancelled() || shutdown_->cancelled()) {
    return absl::FailedPreconditionError("Task not running");
  }
  // Decided here, synchronously, so the task is pending again before anyone (the alloc
  // runner's "is anything still alive?" check) looks at the states.
  EmitEvent(std::move(event));
  tracker_.SetRestartTriggered(failure);
  const RestartTracker::State decision = DecideRestart();
  if (decision.decision != RestartDecision::kRestarting) {
    return absl::FailedPreconditionError("Task not running");
  }
  parked_ = false;
  state_.finished_at = model::Time{};  // the next death records its own time
  model::TaskEvent ev(model::kEventRestarting, Now());
  ev.SetRestartReason(decision.reason.empty() ? std::string(kReasonWithinPolicy) : decision.reason)
      .SetStartDelay(decision.delay);
  UpdateState(model::kTaskStatePending, std::move(ev));
  restart_parked_.Notify();
  return absl::OkStatus();
}

TaskRunner::AfterRun TaskRunner::DecideAfterRun(common::Duration* delay) {
  if (kill_->cancelled())
    tracker_.SetKilled();
  const RestartTracker::State decision = DecideRestart();
  switch (decision.decision) {
    case RestartDecision::kKilled:
      return AfterRun::kKilledDead;
    case RestartDecision::kNotRestarting: {
      model::TaskEvent ev(model::kEventNotRestarting, Now());
      ev.SetRestartReason(decision.reason).SetFailsTask();
      EmitEvent(std::move(ev));
      return AfterRun::kDead;
    }
    case RestartDecision::kTerminated:
      return AfterRun::kDead;
    case RestartDecision::kRestarting:
    case RestartDecision::kNone:
      break;
  }
  model::TaskEvent ev(model::kEventRestarting, Now());
  ev.SetRestartReason(decision.reason.empty() ? std::string(kReasonWithinPolicy) : decision.reason)
      .SetStartDelay(decision.delay);
  UpdateState(model::kTaskStatePending, std::move(ev));
  *delay = decision.delay;
  return AfterRun::kRestart;
}

RestartTracker::State TaskRunner::DecideRestart() {
  const RestartTracker::State decision = tracker_.GetState();
  const RestartTracker::Window w = tracker_.window();
  SetLocalState([&](LocalState& l) {
    l.restarts = RestartWindow{.start_unix_nanos = common::ToUnixNanos(w.start), .count = w.count};
  });
  return decision;
}

void TaskRunner::Shutdown() {
  shutdown_->Cancel();
}

void TaskRunner::Update(std::shared_ptr<const model::Allocation> alloc) {
  if (updates_.Put(std::move(alloc)) && run_called_)
    StartUpdateLoop();
}

void TaskRunner::StartUpdateLoop() {
  if (update_loop_running_)
    return;
  update_loop_running_ = true;
  common::SpawnDetached(executor_, UpdateLoop(), "update hooks of task " + task_->name);
}

asio::awaitable<void> TaskRunner::UpdateLoop() {
  // Take completes at once: only what is pending is taken, closed or not.
  while (updates_.pending()) {
    std::optional<std::shared_ptr<const model::Allocation>> next = co_await updates_.Take();
    UpdateRequest req{.alloc = *next};
    for (auto& hook : hooks_) {
      absl::Status s;
      try {
        s = co_await hook->Update(req);
      } catch (const std::exception& e) {
        s = absl::InternalError(e.what());
      }
      if (!s.ok())
        HookFailed(hook->Name(), s);
    }
  }
  update_loop_running_ = false;
  update_loop_idle_.Notify();
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
  c.mounts = hook_mounts_;
  c.devices = hook_devices_;
  c.device_env = device_env_;
  c.alloc_dir = config_.alloc_dir->dir().string();
  c.task_dir = TaskDirectories().dir.string();
  if (!task_->log_config.disabled) {
    // The supervisor writes the output into alloc/logs/<task>.{stdout,stderr}.N.
    const model::LogConfig& lc = task_->log_config;
    c.logs.dir = config_.alloc_dir->logs_dir().string();
    c.logs.stdout_base = task_->name + ".stdout";
    c.logs.stderr_base = task_->name + ".stderr";
    c.logs.max_files = lc.max_files > 0 ? lc.max_files : kDefaultLogMaxFiles;
    c.logs.max_file_size =
        (lc.max_file_size_mb > 0 ? lc.max_file_size_mb : kDefaultLogMaxFileSizeMb) << 20;
  }
  if (auto it = alloc_->allocated_resources.tasks.find(task_->name);
      it != alloc_->allocated_resources.tasks.end()) {
    c.cpu_shares = it->second.cpu_shares;
    c.memory_mb = it->second.memory_mb;
    c.memory_max_mb = it->second.memory_max_mb;
  }
  if (const model::TaskGroup* g = alloc_->job->FindGroup(alloc_->task_group);
      g != nullptr && !g->networks.empty()) {
    c.network_mode = g->networks.front().mode;
  }
  for (const model::AllocatedPortMapping& p : alloc_->allocated_resources.shared.ports) {
    c.ports.push_back(
        {.label = p.label, .host_port = p.value, .container_port = p.to, .host_ip = p.host_ip});
  }
  if (auto it = alloc_->allocated_resources.tasks.find(task_->name);
      it != alloc_->allocated_resources.tasks.end()) {
    for (const model::NetworkResource& net : it->second.networks) {
      for (const auto* ports : {&net.reserved_ports, &net.dynamic_ports}) {
        for (const model::Port& p : *ports) {
          c.ports.push_back(
              {.label = p.label, .host_port = p.value, .container_port = p.to, .host_ip = net.ip});
        }
      }
    }
  }
  // Called only while StartTask runs, when this runner is alive.
  c.driver_event = [this](const std::string& message) {
    model::TaskEvent ev(model::kEventDriverMessage, Now());
    ev.driver_message = message;
    ev.SetDisplayMessage(message);
    EmitEvent(std::move(ev));
  };
  return c;
}

asio::awaitable<std::optional<drivers::ExitResult>> TaskRunner::WaitOrKill(
    const std::string& task_id) {
  drivers::Driver& driver = *config_.driver;
  // `stop_current_` is cancelled by a kill (with kill_) or by a user restart (alone).
  // One scope for it, shutdown_ and (where the driver can) the task's exit: this wait
  // lasts as long as the task runs, and each `||` held that long costs every running
  // task ~3 KB.
  auto woken = stop_current_->Child();
  shutdown_->Adopt(woken);
  std::optional<absl::StatusOr<drivers::ExitResult>> exit;
  if (driver.CancelOnExit(task_id, woken)) {
    co_await woken->Wait();
    // An exit wins over a stop or a shutdown that came with it, as the first to
    // complete would in a race.
    if (HasExited(task_id) || (!stop_current_->cancelled() && !shutdown_->cancelled())) {
      auto r = co_await driver.WaitTask(task_id);  // at once: the task has exited
      exit = std::move(r);
    }
  } else {
    exit = co_await RaceExit(task_id, woken);
  }
  if (exit) {
    if (exit->ok())
      co_return **exit;
    co_return drivers::ExitResult{.exit_code = -1, .err = std::string(exit->status().message())};
  }
  if (!stop_current_->cancelled()) {
    co_return std::nullopt;  // agent shutdown: the task keeps running
  }
  co_return co_await StopAndWait(task_id);
}

asio::awaitable<std::optional<absl::StatusOr<drivers::ExitResult>>> TaskRunner::RaceExit(
    const std::string& task_id, common::CancellationScopePtr woken) {
  auto waited = co_await (config_.driver->WaitTask(task_id) || woken->Wait());
  if (waited.index() == 0)
    co_return std::move(std::get<0>(waited));
  co_return std::nullopt;
}

bool TaskRunner::HasExited(const std::string& task_id) const {
  absl::StatusOr<drivers::TaskStatus> status = config_.driver->InspectTask(task_id);
  return status.ok() && status->state == drivers::TaskRunState::kExited;
}

asio::awaitable<drivers::ExitResult> TaskRunner::StopAndWait(const std::string& task_id) {
  drivers::Driver& driver = *config_.driver;
  // Killed or restarting: stop with the task's signal, then SIGKILL after the timeout.
  RunPreKillHooks();
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

void TaskRunner::Restore(const model::TaskState& state, const LocalState& local) {
  DROVER_CHECK(!run_called_);
  state_ = state;
  local_ = local;
  // The attempts already used in the policy's window stay used.
  if (local_.restarts) {
    tracker_.RestoreWindow({.start = common::FromUnixNanos(local_.restarts->start_unix_nanos),
                            .count = local_.restarts->count});
  }
  if (!local_.handle) {
    // A run that ended, recorded as such before the agent stopped: not run again.
    if (state_.state != model::kTaskStateDead && !state_.events.empty() &&
        state_.events.back().type == model::kEventTerminated) {
      const model::TaskEvent& e = state_.events.back();
      auto detail = [&e](const char* key) {
        auto it = e.details.find(key);
        return it == e.details.end() ? std::string() : it->second;
      };
      restored_exit_ = drivers::ExitResult{.exit_code = e.exit_code,
                                           .signal = e.signal,
                                           .oom_killed = detail("oom_killed") == "true",
                                           .err = detail("exit_message")};
      return;
    }
    AdoptUnrecordedStart();
    return;
  }
  const drivers::TaskHandle handle = *local_.handle;
  absl::Status recovered = config_.driver == nullptr
                               ? absl::FailedPreconditionError("driver is not available")
                               : config_.driver->RecoverTask(handle);
  if (recovered.ok() && state_.state != model::kTaskStateDead) {
    // Running; or started, with its handle recorded but not yet its Started event.
    restored_handle_ = handle;
    unrecorded_start_ = state_.state != model::kTaskStateRunning;
    return;
  }
  if (recovered.ok()) {
    // Persisted as not running but still there: it must not be left behind.
    (void)config_.driver->DestroyTask(handle.task_id, true);
  } else {
    DROVER_LOG_WARN("task {} of alloc {}: failed to re-attach to {}: {}", task_->name, alloc_->id,
                    handle.task_id, recovered.ToString());
  }
  local_.handle.reset();
  if (state_.state == model::kTaskStateRunning) {
    wait_on_servers_ = alloc_->job->type != model::kJobTypeSystem;
    UpdateState(model::kTaskStatePending,
                model::TaskEvent(model::kEventFailedRestoring, Now())
                    .SetDisplayMessage("failed to restore task; will not run until server is "
                                       "contacted"));
  }
}

void TaskRunner::AdoptUnrecordedStart() {
  DROVER_CHECK(!run_called_);
  if (config_.driver == nullptr || state_.state == model::kTaskStateDead) {
    DROVER_LOG_DEBUG("task {} of alloc {}: not adopting (state {})", task_->name, alloc_->id,
                     state_.state);
    return;
  }
  // The end of the last run recorded: a run the supervisor still holds that ended by
  // then is that one.
  int64_t last_end = 0;
  for (const model::TaskEvent& e : state_.events) {
    if (e.type == model::kEventTerminated)
      last_end = std::max(last_end, e.time);  // Unix ns
  }
  std::optional<drivers::TaskHandle> found =
      config_.driver->FindUnrecorded(alloc_->id + "/" + task_->name + "/", last_end);
  if (!found) {
    DROVER_LOG_DEBUG("task {} of alloc {}: no unrecorded start to adopt (state {})", task_->name,
                     alloc_->id, state_.state);
    return;
  }
  if (absl::Status s = config_.driver->RecoverTask(*found); !s.ok()) {
    DROVER_LOG_WARN("task {} of alloc {}: failed to adopt {}: {}", task_->name, alloc_->id,
                    found->task_id, s.ToString());
    return;
  }
  DROVER_LOG_INFO(
      "task {} of alloc {}: adopting {}, started before the agent stopped but never "
      "recorded",
      task_->name, alloc_->id, found->task_id);
  restored_handle_ = *found;
  unrecorded_start_ = true;
  SetLocalState([&](LocalState& l) { l.handle = *found; });
}

void TaskRunner::RunLoopFailed(const char* what) {
  DROVER_LOG_ERROR("task {} of alloc {}: runner failed: {}", task_->name, alloc_->id, what);
  model::TaskEvent ev(model::kEventHookFailed, Now());
  ev.SetMessage(std::string("task runner failed: ") + what).SetFailsTask();
  UpdateState(model::kTaskStateDead, std::move(ev));
}

asio::awaitable<void> TaskRunner::Run() {
  DROVER_CHECK(!run_called_);
  run_called_ = true;
  if (updates_.pending())
    StartUpdateLoop();  // queued before Run
  try {
    co_await RunLoop();
  } catch (const std::exception& e) {
    // A bug or a third-party exception must not leave the alloc waiting forever.
    RunLoopFailed(e.what());
  }
  parked_ = false;
  updates_.Close();
  while (update_loop_running_)
    co_await update_loop_idle_.Wait();
  if (shutdown_->cancelled() && !kill_->cancelled()) {
    co_await RunShutdownHooks();
  } else {
    SetLocalState([](LocalState& l) { l.run_complete = true; });
    co_await RunStopHooks();
  }
  done_.Set();
}

asio::awaitable<void> TaskRunner::RunLoop() {
  if (config_.on_state_change)
    config_.on_state_change();
  // Restored dead: finished for good, or parked for a restart of the alloc.
  const bool restored_dead = state_.state == model::kTaskStateDead;
  if (restored_dead && local_.run_complete)
    co_return;
  if (wait_on_servers_ && config_.wait_servers_contacted) {
    auto contacted = config_.wait_servers_contacted();
    auto r = co_await (std::move(contacted) || kill_->Wait() || shutdown_->Wait());
    if (r.index() == 2)
      co_return;
  }
  bool run_main = !restored_dead;
  for (;;) {
    if (run_main) {
      const LoopEnd end = co_await MainLoop();
      if (end == LoopEnd::kShutdown)
        co_return;
      if (end == LoopEnd::kKilledDead) {
        UpdateState(model::kTaskStateDead, model::TaskEvent(model::kEventKilled, Now()));
      } else {
        UpdateState(model::kTaskStateDead, std::nullopt);
      }
    }
    run_main = true;
    // ALLOC_RESTART: a dead task (not poststop) waits here so that a restart of the
    // whole allocation can run it again; the alloc runner kills it once nothing in the
    // allocation is alive.
    if (task_->IsPoststop() || kill_->cancelled())
      co_return;
    parked_ = true;
    while (parked_ && !kill_->cancelled() && !shutdown_->cancelled()) {
      co_await (restart_parked_.Wait() || kill_->Wait() || shutdown_->Wait());
    }
    if (parked_)
      co_return;  // killed or shut down while parked
  }
}

asio::awaitable<TaskRunner::Wake> TaskRunner::WaitToStart(common::AsyncSemaphore::Permit* slot) {
  if (config_.wait_start) {
    auto gate = config_.wait_start();
    auto opened = co_await (std::move(gate) || kill_->Wait() || shutdown_->Wait());
    if (opened.index() != 0)
      co_return opened.index() == 2 ? Wake::kShutdown : Wake::kKilled;
  }
  if (slot != nullptr && config_.driver != nullptr && config_.driver->start_slots() != nullptr) {
    auto acquire = config_.driver->start_slots()->Acquire();
    auto got = co_await (std::move(acquire) || kill_->Wait() || shutdown_->Wait());
    if (got.index() != 0)
      co_return got.index() == 2 ? Wake::kShutdown : Wake::kKilled;
    *slot = std::move(std::get<0>(got));
  }
  co_return Wake::kGo;
}

asio::awaitable<absl::StatusOr<std::string>> TaskRunner::StartOrAdopt() {
  if (restored_handle_) {
    // Re-attached after an agent restart: the task is already running. (One whose start
    // was never recorded had no Started event yet.)
    drivers::TaskHandle adopted = *std::exchange(restored_handle_, std::nullopt);
    handle_ = adopted;
    std::optional<model::TaskEvent> event;
    if (std::exchange(unrecorded_start_, false))
      event = model::TaskEvent(model::kEventStarted, Now());
    UpdateState(model::kTaskStateRunning, std::move(event));
    co_return adopted.task_id;
  }
  drivers::TaskConfig cfg = BuildTaskConfig();
  absl::StatusOr<drivers::TaskHandle> started = co_await config_.driver->StartTask(cfg);
  if (started.ok()) {
    handle_ = *started;
    SetLocalState([&](LocalState& l) { l.handle = *started; });
    UpdateState(model::kTaskStateRunning, model::TaskEvent(model::kEventStarted, Now()));
    co_return started->task_id;
  }
  co_return started.status();
}

asio::awaitable<void> TaskRunner::RecordExit(std::string task_id, drivers::ExitResult result) {
  model::TaskEvent term(model::kEventTerminated, Now());
  term.SetExitCode(result.exit_code).SetSignal(result.signal).SetOomKilled(result.oom_killed);
  term.SetExitMessage(result.err);
  EmitEvent(std::move(term));
  handle_.reset();
  SetLocalState([](LocalState& l) { l.handle.reset(); });
  // The end durably recorded before the driver forgets the task (persist_now).
  if (config_.persist_now)
    co_await config_.persist_now(state_, local_);
  if (absl::Status s = config_.driver->DestroyTask(task_id, true); !s.ok()) {
    DROVER_LOG_WARN("failed to destroy task {}: {}", task_id, s.ToString());
  }
  const bool restarting = stop_current_->cancelled() && !kill_->cancelled();
  if (!kill_->cancelled() && !restarting)
    tracker_.SetExitResult(result);
  stop_current_ = kill_->Child();
  co_await RunExitedHooks();
}

asio::awaitable<bool> TaskRunner::RunOnce(common::AsyncSemaphore::Permit* slot) {
  const absl::StatusOr<std::string> started = co_await StartOrAdopt();
  // The environment served this start only (prestart builds it anew for the next):
  // a running task does not keep its copy of the agent's environment.
  env_.reset();
  slot->Release();
  if (!started.ok()) {
    const std::string msg = std::string(started.status().message());
    EmitEvent(model::TaskEvent(model::kEventDriverFailure, Now()).SetDriverError(msg));
    tracker_.SetStartError(started.status());
    co_return true;
  }
  const std::string& task_id = *started;
  co_await RunPoststartHooks(task_id);
  const std::optional<drivers::ExitResult> result = co_await WaitOrKill(task_id);
  if (!result)
    co_return false;
  co_await RecordExit(task_id, *result);
  co_return true;
}

asio::awaitable<void> TaskRunner::StopUnreachedRestored() {
  const std::string task_id = std::exchange(restored_handle_, std::nullopt)->task_id;
  absl::Status stopped =
      co_await config_.driver->StopTask(task_id, KillTimeout(), task_->kill_signal);
  auto r = co_await config_.driver->WaitTask(task_id);
  model::TaskEvent term(model::kEventTerminated, Now());
  if (r.ok()) {
    term.SetExitCode(r->exit_code).SetSignal(r->signal).SetOomKilled(r->oom_killed);
  } else {
    term.SetExitCode(-1).SetExitMessage(stopped.ok() ? std::string(r.status().message())
                                                     : std::string(stopped.message()));
  }
  EmitEvent(std::move(term));
  (void)config_.driver->DestroyTask(task_id, true);
  SetLocalState([](LocalState& l) { l.handle.reset(); });
}

asio::awaitable<TaskRunner::LoopEnd> TaskRunner::MainLoop() {
  bool killed_event_due = false;
  while (!kill_->cancelled()) {
    // The last run ended before the agent stopped, and its end is recorded (its handle
    // gone, its Terminated event kept), but not what came next: decide now, as then.
    const bool ended_before = restored_exit_.has_value();
    common::AsyncSemaphore::Permit start_slot;  // held until the driver answers the start
    // (A re-attached task starts nothing: it takes none, and waits behind no new start.)
    const bool takes_slot = !ended_before && !restored_handle_;
    const Wake wake = co_await WaitToStart(takes_slot ? &start_slot : nullptr);
    if (wake == Wake::kShutdown)
      co_return LoopEnd::kShutdown;
    if (wake == Wake::kKilled)
      break;
    const std::optional<drivers::ExitResult> ended = std::exchange(restored_exit_, std::nullopt);
    absl::Status prestart = absl::OkStatus();
    if (!ended)
      prestart = co_await Prestart();  // (not in a conditional: GCC 12, development.md)
    if (shutdown_->cancelled())
      co_return LoopEnd::kShutdown;
    if (kill_->cancelled())
      break;
    if (ended) {
      tracker_.SetExitResult(*ended);
    } else if (!prestart.ok() && !restored_handle_) {
      start_slot.Release();
      tracker_.SetStartError(prestart);
    } else {
      // (A re-attached task is already running: a prestart failure was reported as an
      // event, but the task is adopted rather than orphaned.)
      const bool ran = co_await RunOnce(&start_slot);
      if (!ran)
        co_return LoopEnd::kShutdown;
    }
    common::Duration delay{0};
    const AfterRun next = DecideAfterRun(&delay);
    if (next == AfterRun::kKilledDead) {
      killed_event_due = true;
      break;
    }
    if (next == AfterRun::kDead)
      break;
    // The decision (its window, its Restarting event) durable before the next run may
    // start: a restore then goes on from here rather than decide, and maybe start, again.
    if (config_.persist_now)
      co_await config_.persist_now(state_, local_);
    auto slept = co_await (config_.clock->Sleep(delay) || kill_->Wait() || shutdown_->Wait());
    if (slept.index() == 2)
      co_return LoopEnd::kShutdown;
    if (slept.index() == 1) {
      killed_event_due = true;
      break;
    }
  }
  if (restored_handle_)
    co_await StopUnreachedRestored();
  // A task killed before it started (or between starts) still closes its "Killing"
  // with "Killed", so every kill reads the same in the event log.
  if (kill_->cancelled() && killing_emitted_)
    killed_event_due = true;
  co_return killed_event_due ? LoopEnd::kKilledDead : LoopEnd::kDead;
}

absl::Status TaskRunner::Signal(const std::string& signal) {
  if (!handle_)
    return absl::FailedPreconditionError("Task not running");
  return config_.driver->SignalTask(handle_->task_id, signal);
}

}  // namespace drover::taskrunner
