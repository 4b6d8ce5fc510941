#include "client/allocrunner/alloc_runner.h"

#include "client/allocrunner/alloc_dir_hook.h"
#include "client/allocrunner/await_previous_hook.h"
#include "client/allocrunner/client_status.h"
#include "client/allocrunner/group_shutdown_delay_hook.h"
#include "client/allocrunner/health_tracker.h"
#include "client/allocrunner/migrate_disk_hook.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::allocrunner {

AllocRunner::AllocRunner(asio::any_io_executor executor, AllocRunnerConfig config)
    : executor_(executor),
      config_(std::move(config)),
      id_(config_.alloc->id),
      alloc_(config_.alloc),
      alloc_dir_(config_.alloc_root, config_.alloc->id, config_.alloc_dir_options),
      prev_alloc_(config_.prev_alloc ? std::move(config_.prev_alloc) : allocwatcher::NoopWatcher()),
      prerun_cancel_(common::CancellationScope::Create(executor)),
      broadcaster_(executor),
      updates_(executor,
               [](const std::shared_ptr<const model::Allocation>& pending,
                  const std::shared_ptr<const model::Allocation>& incoming) {
                 return pending->alloc_modify_index > incoming->alloc_modify_index;
               }),
      run_done_(executor),
      state_handler_done_(executor),
      update_handler_idle_(executor),
      run_exited_(executor),
      destroyed_(executor),
      health_check_(executor),
      health_done_(executor) {
  // What only construction needs is not kept: a node holds thousands of runners.
  const std::map<std::string, drivers::Driver*> task_drivers = std::exchange(config_.drivers, {});
  config_.alloc_root = std::filesystem::path();
  if (alloc_->deployment_status && alloc_->deployment_status->healthy) {
    health_ = alloc_->deployment_status;
    health_deployment_ = alloc_->deployment_id;
  }
  const model::TaskGroup* group = alloc_->Group();
  DROVER_CHECK(group != nullptr);
  coordinator_ = std::make_unique<LifecycleCoordinator>(executor, group->tasks);
  skip_shutdown_delay_ = common::CancellationScope::Create(executor);
  if (alloc_->desired_transition.no_shutdown_delay.value_or(false)) {
    skip_shutdown_delay_->Cancel();
  }
  // Registration order is run order (reference §3.2).
  std::vector<std::string> task_names;
  for (const model::Task& task : group->tasks) {
    task_names.push_back(task.name);
    has_sidecars_ = has_sidecars_ || task.IsSidecar();
  }
  hooks_.push_back(std::make_unique<AllocDirHook>(*config_.pool, alloc_dir_));
  hooks_.push_back(std::make_unique<AwaitPreviousHook>(*prev_alloc_, prerun_cancel_));
  auto not_migrated = [this](const absl::Status& why) {
    for (auto& tr : runners_) {
      tr->EmitEvent(model::TaskEvent(model::kEventDiskNotMigrated, config_.clock->Now())
                        .SetDisplayMessage("Starting with an empty ephemeral disk: " +
                                           std::string(why.message())));
    }
  };
  hooks_.push_back(std::make_unique<MigrateDiskHook>(*prev_alloc_, prerun_cancel_, alloc_dir_,
                                                     task_names, *config_.pool, not_migrated));
  hooks_.push_back(std::make_unique<GroupShutdownDelayHook>(
      *config_.clock, group->shutdown_delay.value_or(common::Duration(0)), skip_shutdown_delay_));
  if (config_.extra_hooks) {
    for (AllocHookPtr& h : config_.extra_hooks())
      hooks_.push_back(std::move(h));
  }
  for (const model::Task& task : group->tasks) {
    taskrunner::TaskRunnerConfig trc;
    trc.alloc = alloc_;
    trc.task_name = task.name;
    auto it = task_drivers.find(task.driver);
    trc.driver = it == task_drivers.end() ? nullptr : it->second;
    trc.alloc_dir = &alloc_dir_;
    trc.node = config_.node;
    trc.region = config_.region;
    trc.clock = config_.clock;
    trc.pool = config_.pool;
    trc.host_env = config_.host_env;
    trc.on_state_change = [this] { OnTaskStateChanged(); };
    // The callbacks capture the runner and the task's index, not copies of the
    // callbacks and the name: small enough for std::function to hold without
    // allocating (a node holds thousands). None is called before construction ends.
    const size_t i = runners_.size();
    if (config_.on_local_state) {
      trc.on_local_state_change = [this, i](const taskrunner::LocalState& ls) {
        config_.on_local_state(runners_[i]->name(), ls);
      };
    }
    if (config_.persist_task) {
      trc.persist_now = [this, i](const model::TaskState& st, const taskrunner::LocalState& ls) {
        return config_.persist_task(runners_[i]->name(), st, ls);
      };
    }
    trc.wait_start = [this, i] { return coordinator_->WaitStart(runners_[i]->name()); };
    trc.restart_jitter = config_.restart_jitter;
    trc.skip_shutdown_delay = skip_shutdown_delay_;
    trc.stats_sampler = config_.stats_sampler;
    trc.reserve_devices = config_.reserve_devices;
    trc.wait_servers_contacted = config_.wait_servers_contacted;
    if (config_.extra_task_hooks) {
      trc.extra_hooks = [f = config_.extra_task_hooks, &task] { return f(task); };
    }
    runners_.push_back(std::make_unique<taskrunner::TaskRunner>(executor, std::move(trc)));
  }
}

AllocRunner::~AllocRunner() {
  broadcaster_.Close();
}

absl::Status AllocRunner::Restore(const std::map<std::string, model::TaskState>& states,
                                  const std::map<std::string, taskrunner::LocalState>& local) {
  DROVER_CHECK(!run_launched_);
  std::error_code ec;
  if (!std::filesystem::is_directory(alloc_dir_.dir(), ec)) {
    return absl::FailedPreconditionError("failed to restore alloc " + id_ + ": alloc dir '" +
                                         alloc_dir_.dir().string() + "' is missing");
  }
  // (Small, local mkdirs on the loop: restore runs once, at agent start.)
  if (absl::Status s = alloc_dir_.Build(); !s.ok()) {
    return common::Annotate(s, "failed to restore alloc " + id_);
  }
  for (auto& tr : runners_) {
    auto st = states.find(tr->name());
    if (st == states.end()) {
      tr->AdoptUnrecordedStart();  // recorded nothing, but may have been started
      continue;
    }
    auto ls = local.find(tr->name());
    tr->Restore(st->second, ls == local.end() ? taskrunner::LocalState{} : ls->second);
  }
  std::map<std::string, model::TaskState> restored;
  for (const auto& tr : runners_)
    restored[tr->name()] = tr->state();
  coordinator_->Restore(restored);
  return absl::OkStatus();
}

taskrunner::TaskRunner* AllocRunner::task_runner(const std::string& name) {
  for (auto& tr : runners_) {
    if (tr->name() == name)
      return tr.get();
  }
  return nullptr;
}

std::vector<taskrunner::TaskRunner*> AllocRunner::task_runners() {
  std::vector<taskrunner::TaskRunner*> out;
  for (auto& tr : runners_)
    out.push_back(tr.get());
  return out;
}

AllocUsage AllocRunner::Usage() const {
  std::map<std::string, drivers::TaskResourceUsage> tasks;
  for (const auto& tr : runners_) {
    if (std::optional<drivers::TaskResourceUsage> u = tr->LatestStats())
      tasks[tr->name()] = *std::move(u);  // not running, or not sampled yet: left out
  }
  return SumUsage(std::move(tasks));
}

model::AllocClientUpdate AllocRunner::ClientUpdate() const {
  model::AllocClientUpdate u;
  u.id = id_;
  u.node_id = alloc_->node_id;
  for (const auto& tr : runners_)
    u.task_states[tr->name()] = tr->state();
  const ClientStatus cs = ComputeClientStatus(u.task_states);
  u.client_status = cs.status;
  u.client_description = cs.description;
  u.deployment_status = health_;
  u.deployment_id = health_ ? health_deployment_ : alloc_->deployment_id;
  if (u.client_status == model::kClientComplete || u.client_status == model::kClientFailed) {
    // Terminal: every task gets a finish time (used for rescheduling decisions).
    for (auto& [name, st] : u.task_states) {
      if (st.finished_at == model::Time{})
        st.finished_at = config_.clock->Now();
    }
  }
  return u;
}

void AllocRunner::ReportState() {
  model::AllocClientUpdate u = ClientUpdate();
  if (last_reported_ && *last_reported_ == u)
    return;
  last_reported_ = std::make_shared<const model::AllocClientUpdate>(std::move(u));
  broadcaster_.Send(last_reported_);
  health_check_.Notify();
  if (config_.on_update)
    config_.on_update(last_reported_);
}

asio::awaitable<void> AllocRunner::Run() {
  DROVER_CHECK(!run_launched_);
  run_launched_ = true;
  if (task_state_pass_queued_)
    PostTaskStatePass();  // changes made before Run
  if (updates_.pending())
    StartUpdateHandler();
  if (WatchesHealth()) {
    common::SpawnDetached(executor_, WatchHealth(), "alloc " + id_ + " health watcher");
  } else {
    health_done_.Set();
  }
  if (config_.wait_recorded)
    co_await config_.wait_recorded();
  if (!alloc_->Terminal() && !destroy_launched_ && !shutdown_launched_) {
    if (std::optional<std::string> failure = co_await RunPrerunHooks()) {
      if (prerun_cancel_->cancelled()) {
        // Stopped or destroyed while a hook waited (e.g. for the previous alloc): the
        // tasks never ran and did not fail.
        for (auto& tr : runners_)
          tr->RequestKill(std::nullopt);
      } else {
        DROVER_LOG_ERROR("alloc {}: {}", id_, *failure);
        for (auto& tr : runners_)
          tr->MarkFailedKill(*failure);
      }
    }
  } else {
    for (auto& tr : runners_)
      tr->RequestKill(std::nullopt);
  }
  prerun_done_ = true;
  if (runners_.size() == 1) {
    // Most allocations have one task: it runs on this coroutine rather than a spawned
    // one, which would cost every running task ~1 KB (a spawn's frame and a wait on it).
    co_await runners_.front()->Run();
  } else {
    for (auto& tr : runners_) {
      common::SpawnDetached(executor_, tr->Run(), "task " + tr->name() + " of alloc " + id_);
    }
  }
  for (auto& tr : runners_) {
    co_await tr->WaitDone();
  }
  if (!shutdown_launched_) {
    co_await RunPostrunHooks();
  }
  run_done_.Set();
  updates_.Close();
  OnTaskStateChanged();  // the last pass
  StopHealthWatch();
  co_await state_handler_done_.Wait();
  while (update_handler_running_)
    co_await update_handler_idle_.Wait();
  co_await health_done_.Wait();
  // Last: whoever waits on this may destroy the runner once it resumes.
  run_exited_.Set();
}

void AllocRunner::OnTaskStateChanged() {
  if (task_state_pass_queued_ || state_handler_done_.IsSet())
    return;
  task_state_pass_queued_ = true;
  if (run_launched_)
    PostTaskStatePass();
}

void AllocRunner::PostTaskStatePass() {
  // Run waits for the last pass before it ends, and the runner outlives Run: `this`
  // is alive when the pass runs.
  asio::post(executor_, [this] {
    try {
      HandleTaskStates();
    } catch (const std::exception& e) {
      // Logged, not thrown out of the control loop; Run is not left waiting for it.
      DROVER_LOG_ERROR("alloc {}: task state pass failed: {}", id_, e.what());
      if (run_done_.IsSet())
        state_handler_done_.Set();
    }
  });
}

void AllocRunner::HandleTaskStates() {
  task_state_pass_queued_ = false;
  if (!killing_) {
    std::optional<model::TaskEvent> ev;
    bool any_live = false;
    bool all_live_sidecars = true;
    for (const auto& tr : runners_) {
      if (tr->task().IsPoststop())
        continue;
      if (tr->state().state != model::kTaskStateDead) {
        any_live = true;
        all_live_sidecars = all_live_sidecars && tr->task().IsSidecar();
        continue;
      }
      if (tr->task().leader) {
        ev = model::TaskEvent(model::kEventLeaderDead, config_.clock->Now());
      } else if (tr->state().failed && !ev) {
        ev = model::TaskEvent(model::kEventSiblingFailed, config_.clock->Now());
        ev->SetFailedSibling(tr->name());
      }
    }
    if (any_live && !ev && has_sidecars_ && all_live_sidecars) {
      ev = model::TaskEvent(model::kEventMainDead, config_.clock->Now());
    }
    if (ev && any_live) {
      killing_ = true;
      common::SpawnDetached(executor_, KillTasks(std::move(ev)), "kill tasks of alloc " + id_);
    }
  }
  // Nothing alive any more (poststop included): release the tasks parked for a
  // restart of the whole allocation, so that Run can finish.
  const bool all_dead = std::all_of(runners_.begin(), runners_.end(), [](const auto& tr) {
    return tr->state().state == model::kTaskStateDead;
  });
  if (all_dead) {
    for (auto& tr : runners_) {
      if (tr->parked())
        tr->RequestKill(std::nullopt);
    }
  }
  std::map<std::string, model::TaskState> states;
  for (const auto& tr : runners_)
    states[tr->name()] = tr->state();
  coordinator_->TaskStateUpdated(states);
  ReportState();
  if (run_done_.IsSet())
    state_handler_done_.Set();
}

bool AllocRunner::WatchesHealth() const {
  return !alloc_->Terminal() && alloc_->job && alloc_->job->type == model::kJobTypeService;
}

namespace {

// What judges an allocation's health: in a deployment, its group's update block;
// otherwise (a drain) its migrate block. Nothing for health_check "manual": the
// deployment API sets it.
std::optional<model::MigrateStrategy> HealthStrategy(const model::Allocation& alloc) {
  const model::TaskGroup& group = *alloc.Group();
  if (!alloc.deployment_id.empty() && group.Rolling()) {
    const model::UpdateStrategy& u = *group.update;
    if (u.health_check == model::kUpdateHealthManual)
      return std::nullopt;
    return model::MigrateStrategy{u.max_parallel, u.health_check, u.min_healthy_time,
                                  u.healthy_deadline};
  }
  // A job stored before migrate blocks were kept has none: Nomad's defaults then.
  return group.migrate.value_or(model::MigrateStrategy{
      1, model::kMigrateHealthChecks, std::chrono::seconds(10), std::chrono::minutes(5)});
}

}  // namespace

asio::awaitable<void> AllocRunner::WatchHealth() {
  using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
  // The tracker points into the version of the job it judges: kept alive here, as
  // updates replace alloc_ meanwhile.
  std::shared_ptr<const model::Allocation> judged;
  std::optional<HealthTracker> tracker;
  // Health is judged once per deployment: an allocation moved into another one (an
  // in-place update) is judged again from then on.
  bool started = false;
  while (!health_stopped_) {
    const common::Time now = config_.clock->Now();
    if (!started || alloc_->deployment_id != judged->deployment_id) {
      if (started && health_) {
        health_.reset();
        ReportState();
      }
      started = true;
      judged = alloc_;
      tracker.reset();
      if (!health_) {
        if (std::optional<model::MigrateStrategy> strategy = HealthStrategy(*judged))
          tracker.emplace(*judged->Group(), *strategy, now);
      }
    }
    if (tracker && !health_) {
      if (std::optional<bool> healthy = tracker->Observe(ClientUpdate().task_states, now)) {
        health_ = model::AllocDeploymentStatus{.healthy = *healthy, .timestamp = now};
        health_deployment_ = judged->deployment_id;
        DROVER_LOG_DEBUG("alloc {}: {}", id_, *healthy ? "healthy" : "unhealthy");
        tracker.reset();
        ReportState();
      }
    }
    if (tracker) {
      const common::Duration wait = tracker->NextCheck() - now;
      co_await (health_check_.Wait() || config_.clock->Sleep(wait));
    } else {
      co_await health_check_.Wait();
    }
  }
  health_done_.Set();
}

void AllocRunner::StopHealthWatch() {
  health_stopped_ = true;
  health_check_.Notify();
}

void AllocRunner::StartUpdateHandler() {
  if (update_handler_running_)
    return;
  update_handler_running_ = true;
  common::SpawnDetached(executor_, HandleAllocUpdates(), "alloc " + id_ + " update handler");
}

asio::awaitable<void> AllocRunner::HandleAllocUpdates() {
  try {
    // Take completes at once: only what is pending is taken, closed or not.
    while (updates_.pending()) {
      std::optional<std::shared_ptr<const model::Allocation>> next = co_await updates_.Take();
      const bool stopping = !alloc_->Terminal() && (*next)->Terminal();
      alloc_ = *next;
      health_check_.Notify();  // it may have moved into another deployment
      if (!alloc_->Terminal()) {
        co_await RunUpdateHooks(alloc_);
        for (auto& tr : runners_)
          tr->Update(alloc_);
      }
      if (stopping) {
        StopHealthWatch();  // a stopped allocation's health matters to nobody
        co_await KillTasks(std::nullopt);
      }
    }
  } catch (const std::exception& e) {
    // Logged, not thrown: Run waits for this handler to go idle, and must not hang. The
    // next update starts it again.
    DROVER_LOG_ERROR("alloc {}: update handler failed: {}", id_, e.what());
  }
  update_handler_running_ = false;
  update_handler_idle_.Notify();
}

void AllocRunner::Update(std::shared_ptr<const model::Allocation> alloc) {
  // Applied at once, before queuing: a stop that is already waiting out shutdown delays
  // must be able to cut them short.
  if (alloc->desired_transition.no_shutdown_delay.value_or(false)) {
    skip_shutdown_delay_->Cancel();
  }
  if (!updates_.Put(std::move(alloc))) {
    DROVER_LOG_DEBUG("alloc {}: dropped stale or late update", id_);
  } else if (run_launched_) {
    StartUpdateHandler();
  }
}

bool AllocRunner::Restartable() const {
  if (alloc_->Terminal() || run_done_.IsSet() || killing_ || destroy_launched_ ||
      shutdown_launched_) {
    return false;
  }
  const std::string status = ClientUpdate().client_status;
  return status != model::kClientComplete && status != model::kClientFailed;
}

absl::Status AllocRunner::RestartTask(const std::string& task, const std::string& reason) {
  taskrunner::TaskRunner* tr = task_runner(task);
  if (tr == nullptr) {
    return absl::NotFoundError("Could not find task runner for task: " + task);
  }
  if (!Restartable()) {
    return absl::FailedPreconditionError("allocation is not running");
  }
  model::TaskEvent ev(model::kEventRestartSignal, config_.clock->Now());
  ev.SetRestartReason(reason);
  return tr->Restart(std::move(ev), /*failure=*/false);
}

absl::Status AllocRunner::RestartRunning(const std::string& reason) {
  if (!Restartable()) {
    return absl::FailedPreconditionError("allocation is not running");
  }
  for (auto& tr : runners_) {
    if (!tr->running())
      continue;
    model::TaskEvent ev(model::kEventRestartSignal, config_.clock->Now());
    ev.SetRestartReason(reason);
    if (absl::Status s = tr->Restart(std::move(ev), /*failure=*/false);
        !s.ok() && !absl::IsFailedPrecondition(s)) {
      return common::Annotate(s, "failed to restart task '" + tr->name() + "'");
    }
  }
  return absl::OkStatus();
}

absl::Status AllocRunner::RestartAll(const std::string& reason) {
  if (!Restartable()) {
    return absl::FailedPreconditionError("allocation is not running");
  }
  // Back to the first stage: gates close until every task is pending again.
  coordinator_->Restart();
  for (auto& tr : runners_) {
    if (tr->task().IsPoststop())
      continue;
    model::TaskEvent ev(model::kEventRestartSignal, config_.clock->Now());
    ev.SetRestartReason(reason);
    if (absl::Status s = tr->ForceRestart(std::move(ev), /*failure=*/false);
        !s.ok() && !absl::IsFailedPrecondition(s)) {
      return common::Annotate(s, "failed to restart task '" + tr->name() + "'");
    }
  }
  OnTaskStateChanged();
  return absl::OkStatus();
}

absl::Status AllocRunner::Signal(const std::string& task, const std::string& signal) {
  std::vector<taskrunner::TaskRunner*> targets;
  if (task.empty()) {
    for (auto& tr : runners_) {
      if (tr->running())
        targets.push_back(tr.get());
    }
  } else {
    taskrunner::TaskRunner* tr = task_runner(task);
    if (tr == nullptr) {
      return absl::NotFoundError("Failed to signal task: " + task + ", err: task not found");
    }
    targets.push_back(tr);
  }
  for (taskrunner::TaskRunner* tr : targets) {
    model::TaskEvent ev(model::kEventSignaling, config_.clock->Now());
    ev.SetTaskSignal(signal).SetTaskSignalReason("User requested signal");
    if (!tr->running()) {
      return absl::FailedPreconditionError("Task not running");
    }
    tr->EmitEvent(std::move(ev));
    if (absl::Status s = tr->Signal(signal); !s.ok()) {
      return common::Annotate(s, "failed to signal task '" + tr->name() + "'");
    }
  }
  return absl::OkStatus();
}

model::TaskEvent AllocRunner::KillingEvent(const taskrunner::TaskRunner& tr) const {
  model::TaskEvent ev(model::kEventKilling, config_.clock->Now());
  ev.SetKillTimeout(tr.KillTimeout());
  return ev;
}

asio::awaitable<void> AllocRunner::KillTasks(std::optional<model::TaskEvent> reason_event,
                                             bool include_poststop) {
  prerun_cancel_->Cancel();
  const bool any_live = std::any_of(runners_.begin(), runners_.end(), [](const auto& tr) {
    return tr->state().state != model::kTaskStateDead;
  });
  if (any_live && run_launched_) {
    co_await RunPreKillHooks();
  }
  if (reason_event) {
    for (auto& tr : runners_) {
      if (!tr->task().IsPoststop() && tr->state().state != model::kTaskStateDead &&
          !tr->kill_requested()) {
        tr->EmitEvent(*reason_event);
      }
    }
  }
  auto kill_wave = [&](auto pick) -> asio::awaitable<void> {
    std::vector<taskrunner::TaskRunner*> wave;
    for (auto& tr : runners_) {
      if (pick(*tr))
        wave.push_back(tr.get());
    }
    for (auto* tr : wave) {
      tr->RequestKill(run_launched_ ? std::optional(KillingEvent(*tr)) : std::nullopt);
    }
    if (run_launched_) {
      for (auto* tr : wave)
        co_await tr->WaitDone();
    }
  };
  co_await kill_wave([](const taskrunner::TaskRunner& tr) { return tr.task().leader; });
  co_await kill_wave([](const taskrunner::TaskRunner& tr) {
    return !tr.task().leader && !tr.task().IsSidecar() && !tr.task().IsPoststop();
  });
  co_await kill_wave([](const taskrunner::TaskRunner& tr) { return tr.task().IsSidecar(); });
  if (include_poststop) {
    co_await kill_wave([](const taskrunner::TaskRunner& tr) { return tr.task().IsPoststop(); });
  }
}

asio::awaitable<void> AllocRunner::Destroy() {
  if (destroy_launched_) {
    co_await destroyed_.Wait();
    co_return;
  }
  destroy_launched_ = true;
  co_await KillTasks(std::nullopt, /*include_poststop=*/true);
  if (run_launched_) {
    co_await run_exited_.Wait();
  } else {
    updates_.Close();
  }
  co_await RunDestroyHooks();
  broadcaster_.Close();
  destroyed_.Set();
}

asio::awaitable<void> AllocRunner::Shutdown() {
  if (destroy_launched_ || shutdown_launched_)
    co_return;
  shutdown_launched_ = true;
  prerun_cancel_->Cancel();
  StopHealthWatch();
  for (auto& tr : runners_)
    tr->Shutdown();
  if (run_launched_) {
    co_await run_exited_.Wait();
  } else {
    updates_.Close();
  }
  co_await RunShutdownHooks();
}

}  // namespace drover::allocrunner
