// TaskRunner: runs one task of an allocation through the driver (reference §2.4):
// start gate → prestart hooks → environment and interpolation → start → poststart
// hooks → wait → exited hooks → restart decision by the RestartTracker → ... → dead.
// A dead task (other than poststop) then parks until it is killed or restarted with
// the whole allocation (ALLOC_RESTART); stop hooks run once Run finishes. It owns the
// task's TaskState, its events and its LocalState (hook state and driver handle).
//
// A coroutine on the control loop; all members are touched only from it, so no locks.
// The AllocRunner drives it with Run(), RequestKill() and WaitDone(); state changes are
// reported through `on_state_change` (a coalescing notification, never a re-entrant
// call into the AllocRunner).
//
//   pending ──start ok──► running ──exit──► (restart? ──delay──► pending) ──► dead
//      └──start error──► (restart?) ...            kill at any point ──► dead
//   dead ──(parked) ForceRestart──► pending        Shutdown: return, task keeps running
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "client/allocdir/alloc_dir.h"
#include "client/taskrunner/restart_tracker.h"
#include "client/taskrunner/stats_sampler.h"
#include "client/taskrunner/task_env.h"
#include "client/taskrunner/task_hook.h"
#include "client/taskrunner/validate_hook.h"
#include "common/async_semaphore.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/event.h"
#include "common/mailbox.h"
#include "devices/device_plugin.h"
#include "drivers/driver.h"
#include "model/allocation.h"
#include "model/node.h"

namespace drover::taskrunner {

struct TaskRunnerConfig {
  std::shared_ptr<const model::Allocation> alloc;
  std::string task_name;
  drivers::Driver* driver = nullptr;        // null: the node has no such driver
  allocdir::AllocDir* alloc_dir = nullptr;  // must outlive the runner
  const model::Node* node = nullptr;        // must outlive the runner
  std::string region;
  common::Clock* clock = nullptr;
  asio::thread_pool* pool = nullptr;
  // The agent's environment (shared: one copy per node, not per task).
  std::shared_ptr<const std::map<std::string, std::string>> host_env;
  // Upper bound on kill_timeout (Nomad's client max_kill_timeout).
  common::Duration max_kill_timeout = std::chrono::seconds(30);
  std::function<void()> on_state_change;
  // Completes when the task may (re)start (the lifecycle coordinator's gate); none
  // means "always".
  std::function<asio::awaitable<void>()> wait_start;
  std::function<double()> restart_jitter;  // tests make restart delays exact
  // Cancelled when the server asks to skip shutdown delays (NoShutdownDelay); shared by
  // the alloc's tasks. None: the runner makes its own.
  common::CancellationScopePtr skip_shutdown_delay;
  // The node's sampler of running tasks' resource usage. None: the runner makes its
  // own, sampling every second.
  std::shared_ptr<StatsSampler> stats_sampler;
  // Shared: the same for every task, and a copy per task costs a few hundred bytes.
  std::shared_ptr<const ValidateHookConfig> validate = DefaultValidateHookConfig();
  // Called whenever LocalState changed (what the state DB persists).
  std::function<void(const LocalState&)> on_local_state_change;
  // Writes the task's state and local state and completes once they are durable. The
  // runner awaits it before the driver may forget a finished task: an agent killed in
  // between must find either the task or its end, never neither (it would run the task
  // a second time). Unset: nothing is awaited.
  std::function<asio::awaitable<void>(const model::TaskState&, const LocalState&)> persist_now;
  // Reserves device instances for the task (the device manager's Reserve); none: the
  // node has no device plugins, and a task with allocated devices fails to start.
  std::function<asio::awaitable<absl::StatusOr<devices::ContainerReservation>>(
      model::AllocatedDeviceResource)>
      reserve_devices;
  // Hooks appended after the built-in ones (tests; later integrations).
  std::function<std::vector<TaskHookPtr>()> extra_hooks;
  // Completes once the client has heard from the servers. A restored task whose process
  // could not be re-attached waits for it before starting again (Nomad's rule: the
  // server may have moved the alloc meanwhile); none means "do not wait".
  std::function<asio::awaitable<void>()> wait_servers_contacted;
};

class TaskRunner {
 public:
  TaskRunner(asio::any_io_executor executor, TaskRunnerConfig config);
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  // Picks up what an earlier runner of this task persisted (agent restart, reference
  // §4.7): its TaskState (events and restart counts continue) and LocalState. A running
  // task is re-attached through the driver by its persisted handle; if that fails the
  // task gets "Failed Restoring Task", goes back to pending, and starts again only once
  // the servers were contacted (system jobs at once). Call before Run.
  void Restore(const model::TaskState& state, const LocalState& local);
  // At restore, for a task with no recorded handle (Restore calls it too): adopts what
  // the driver started for it before the agent stopped, so that it is not started
  // twice. Before Run().
  void AdoptUnrecordedStart();
  // Runs the task to completion (dead). Call once.
  asio::awaitable<void> Run();
  // Emits `event` (normally "Killing") unless the task already finished, then stops the
  // task and ends Run. Idempotent; returns at once.
  void RequestKill(std::optional<model::TaskEvent> event);
  // Restarts the running task (user request or a check): emits `event` ("Restart
  // Signaled"), stops the task with its kill signal and starts it again at once.
  // `failure` counts against the restart policy; a user restart does not.
  // FailedPrecondition "Task not running" when there is no running task.
  absl::Status Restart(model::TaskEvent event, bool failure);
  // Restarts the task whether it is running or dead and parked (restart of the whole
  // allocation). FailedPrecondition "Task not running" when it is neither.
  absl::Status ForceRestart(model::TaskEvent event, bool failure);
  // Marks the task failed with a "Setup Failure" event and kills it (prerun failures).
  void MarkFailedKill(const std::string& reason);
  // Leaves the task running and ends Run without killing it or running stop hooks
  // (agent shutdown); shutdown hooks run instead. Idempotent.
  void Shutdown();
  // Passes a newer allocation to the update hooks (serialized, latest wins).
  void Update(std::shared_ptr<const model::Allocation> alloc);
  // Completes when Run has finished.
  asio::awaitable<void> WaitDone() { return done_.Wait(); }
  bool done() const { return done_.IsSet(); }

  // Appends an event that is not a state change (e.g. "Sibling Task Failed").
  void EmitEvent(model::TaskEvent event);

  const std::string& name() const { return task_->name; }
  const model::Task& task() const { return *task_; }
  const model::TaskState& state() const { return state_; }
  // kill_timeout bounded by the client's max_kill_timeout.
  common::Duration KillTimeout() const;
  // The task's directories, computed when needed rather than kept: five
  // std::filesystem::paths, each keeping its components apart, are ~3 KB a task.
  allocdir::TaskDir TaskDirectories() const {
    return config_.alloc_dir->task_dir(config_.task_name);
  }
  bool running() const { return handle_.has_value(); }
  // Dead and waiting in ALLOC_RESTART for a kill or a restart of the allocation.
  bool parked() const { return parked_; }
  const LocalState& local_state() const { return local_; }
  bool kill_requested() const { return kill_->cancelled(); }
  // Latest resource usage of the running task (sampled by the stats hook), if any.
  std::optional<drivers::TaskResourceUsage> LatestStats() const { return latest_stats_; }
  // Signals the running task. FailedPrecondition "Task not running" otherwise.
  absl::Status Signal(const std::string& signal);

 private:
  enum class LoopEnd { kDead, kKilledDead, kShutdown };
  asio::awaitable<LoopEnd> MainLoop();
  // MainLoop's steps. WaitToStart: the lifecycle gate, then (when `slot` is given) one
  // of the driver's start slots; raced with a kill and the agent's shutdown.
  enum class Wake { kGo, kKilled, kShutdown };
  asio::awaitable<Wake> WaitToStart(common::AsyncSemaphore::Permit* slot);
  // Starts the task through the driver, or adopts the re-attached one; its task id.
  asio::awaitable<absl::StatusOr<std::string>> StartOrAdopt();
  // After the run of `task_id` ended with `result`: its Terminated event, its end made
  // durable before the driver forgets it, the restart tracker, the exited hooks.
  asio::awaitable<void> RecordExit(std::string task_id, drivers::ExitResult result);
  // One run after a successful prestart: the start (releasing `slot` once the driver
  // answered), the poststart hooks, the wait, the exit's record. False when the agent
  // shut down meanwhile (the task is left running).
  asio::awaitable<bool> RunOnce(common::AsyncSemaphore::Permit* slot);
  // A re-attached task killed before MainLoop reached it is stopped, not left running
  // (reference §2.4 step 6).
  asio::awaitable<void> StopUnreachedRestored();
  // MainLoop, then parking in ALLOC_RESTART until killed, restarted or shut down.
  asio::awaitable<void> RunLoop();
  // Runs the update hooks for the queued updates, then ends; started by the first
  // update queued while none runs (no coroutine waits for updates meanwhile).
  void StartUpdateLoop();
  asio::awaitable<void> UpdateLoop();
  // Hook phases (task_runner_hooks.cc).
  asio::awaitable<absl::Status> Prestart();
  asio::awaitable<void> RunPoststartHooks(const std::string& task_id);
  asio::awaitable<void> RunExitedHooks();
  void RunPreKillHooks();
  asio::awaitable<void> RunStopHooks();
  asio::awaitable<void> RunShutdownHooks();
  // Emits "Task hook failed" for a hook error; exceptions become errors here.
  void HookFailed(std::string_view hook, const absl::Status& error);
  void SetLocalState(std::function<void(LocalState&)> change);
  void EmitHookEvent(model::TaskEvent event);

  drivers::TaskConfig BuildTaskConfig();
  // The restart policy's decision; its window is persisted with the local state.
  RestartTracker::State DecideRestart();
  // After a run (or a failed start): the restart decision with its events (out of
  // MainLoop, whose frame every running task holds: a TaskEvent is ~570 bytes). On
  // kRestart, `*delay` is the wait before the next start.
  enum class AfterRun { kRestart, kDead, kKilledDead };
  AfterRun DecideAfterRun(common::Duration* delay);
  // Run's last resort for an exception out of the loop: the task dies with an event.
  void RunLoopFailed(const char* what);
  // The task's exit, or nullopt when the agent is shutting down (task left running).
  // The steps before and after the wait are their own functions: this one's frame is
  // held for as long as the task runs, by every running task.
  asio::awaitable<std::optional<drivers::ExitResult>> WaitOrKill(const std::string& task_id);
  bool HasExited(const std::string& task_id) const;
  // For a driver that cannot cancel a scope on the task's exit: its wait raced with
  // `woken`; nullopt when `woken` won.
  asio::awaitable<std::optional<absl::StatusOr<drivers::ExitResult>>> RaceExit(
      const std::string& task_id, common::CancellationScopePtr woken);
  // Stops the task (kill or restart): prekill hooks, shutdown delay, the kill signal and
  // then SIGKILL; its exit.
  asio::awaitable<drivers::ExitResult> StopAndWait(const std::string& task_id);
  // On kill: waits the task's shutdown_delay (cut short by an exit or a skip request).
  asio::awaitable<void> ShutdownDelay(const std::string& task_id);
  void UpdateState(const std::string& state, std::optional<model::TaskEvent> event);
  model::Time Now() const { return config_.clock->Now(); }

  asio::any_io_executor executor_;
  TaskRunnerConfig config_;
  std::shared_ptr<const model::Allocation> alloc_;  // keeps task_ alive
  const model::Task* task_;
  RestartTracker tracker_;
  model::TaskState state_;
  std::optional<drivers::TaskHandle> handle_;
  std::optional<TaskEnv> env_;
  // What the prestart hooks asked the driver to mount and expose (rebuilt each start).
  std::vector<drivers::MountConfig> hook_mounts_;
  std::vector<drivers::DeviceConfig> hook_devices_;
  std::map<std::string, std::string> device_env_;
  std::vector<TaskHookPtr> hooks_;
  LocalState local_;
  std::optional<drivers::TaskResourceUsage> latest_stats_;
  common::Mailbox<std::shared_ptr<const model::Allocation>> updates_;
  bool update_loop_running_ = false;
  common::Notifier update_loop_idle_;
  common::Notifier restart_parked_;
  bool parked_ = false;
  common::CancellationScopePtr shutdown_;
  common::CancellationScopePtr kill_;
  // Cancelled to stop the current run of the task: by a kill, or alone by Restart().
  common::CancellationScopePtr stop_current_;
  common::Event done_;
  bool run_called_ = false;
  // Set by Restore: a re-attached task to wait on instead of starting one, or a task
  // that must wait for the servers before it may start again.
  std::optional<drivers::TaskHandle> restored_handle_;
  bool unrecorded_start_ = false;
  // Restored: the last run ended (recorded) and the restart decision did not.
  std::optional<drivers::ExitResult>
      restored_exit_;  // restored_handle_ was adopted by AdoptUnrecordedStart
  bool wait_on_servers_ = false;
  bool killing_emitted_ = false;
};

}  // namespace drover::taskrunner
