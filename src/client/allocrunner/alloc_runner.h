// AllocRunner: runs one allocation on this node (reference §2.2): runs its alloc hooks
// (alloc dir, waiting for and migrating from the allocation it replaces, ...), one
// TaskRunner per task, reacts to task state (a dead leader or a failed task kills the
// rest; when nothing is alive, tasks parked for a restart-all are released), applies
// server updates (a terminal desired status stops the tasks, leader first, and runs no
// update hooks), computes the client status, reports it and broadcasts it to local
// listeners (e.g. the watcher of a replacement allocation).
//
//   New ──Run──► Prerun ──► TasksRunning ──► Postrun ──► Exited
//   any ──Destroy──► kill tasks ─► wait Run ─► destroy hooks ─► destroyed
//   any ──Shutdown──► tasks left running ─► wait Run ─► shutdown hooks
//
// A set of coroutines on the control loop; no locks. Destroy() is idempotent, works
// whether or not Run() was ever called, and is best-effort (a failing step is logged
// and the rest still runs).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/allocdir/alloc_dir.h"
#include "client/allocrunner/alloc_hook.h"
#include "client/allocrunner/alloc_usage.h"
#include "client/allocrunner/lifecycle_coordinator.h"
#include "client/allocwatcher/prev_alloc_watcher.h"
#include "client/taskrunner/device_hook.h"
#include "client/taskrunner/task_runner.h"
#include "common/broadcaster.h"
#include "common/cancellation.h"
#include "common/event.h"
#include "common/mailbox.h"
#include "drivers/driver.h"
#include "model/allocation.h"
#include "model/node.h"

namespace drover::allocrunner {

// A runner's report of its alloc's client view, shared with whoever keeps it; never
// modified once made.
using ReportPtr = std::shared_ptr<const model::AllocClientUpdate>;

struct AllocRunnerConfig {
  std::shared_ptr<const model::Allocation> alloc;
  std::filesystem::path alloc_root;
  allocdir::AllocDirOptions alloc_dir_options;
  const model::Node* node = nullptr;  // must outlive the runner
  std::string region;
  std::map<std::string, drivers::Driver*> drivers;
  common::Clock* clock = nullptr;
  asio::thread_pool* pool = nullptr;
  // The agent's environment (shared: one copy per node, not per task).
  std::shared_ptr<const std::map<std::string, std::string>> host_env;
  // Receives the client-owned view of the alloc whenever it changes.
  std::function<void(const ReportPtr&)> on_update;
  // Receives a task's LocalState whenever it changes (to persist it).
  std::function<void(const std::string& task, const taskrunner::LocalState&)> on_local_state;
  // See TaskRunnerConfig::persist_now.
  std::function<asio::awaitable<void>(const std::string& task, const model::TaskState&,
                                      const taskrunner::LocalState&)>
      persist_task;
  std::function<double()> restart_jitter;
  // See TaskRunnerConfig::stats_sampler.
  std::shared_ptr<taskrunner::StatsSampler> stats_sampler;
  // See TaskRunnerConfig::reserve_devices.
  taskrunner::DeviceHook::ReserveFn reserve_devices;
  // The allocation this one replaces (none: a no-op watcher).
  std::unique_ptr<allocwatcher::PrevAllocWatcher> prev_alloc;
  // Hooks appended after the built-in ones (tests; later integrations).
  std::function<std::vector<AllocHookPtr>()> extra_hooks;
  std::function<std::vector<taskrunner::TaskHookPtr>(const model::Task&)> extra_task_hooks;
  // See TaskRunnerConfig::wait_servers_contacted.
  std::function<asio::awaitable<void>()> wait_servers_contacted;
  // Completes once the allocation is in the state DB (or failed to be): nothing of it
  // runs before, so that an agent killed at any moment restores every allocation that
  // has a running task, and adopts rather than starts again. Unset: no wait.
  std::function<asio::awaitable<void>()> wait_recorded;
};

using AllocBroadcaster = allocwatcher::AllocStateBroadcaster;

class AllocRunner {
 public:
  AllocRunner(asio::any_io_executor executor, AllocRunnerConfig config);
  ~AllocRunner();
  AllocRunner(const AllocRunner&) = delete;
  AllocRunner& operator=(const AllocRunner&) = delete;

  // Picks up the persisted state of every task after an agent restart (reference
  // §4.7; see TaskRunner::Restore) and the lifecycle stage it implies. Fails when the
  // alloc dir is gone (nothing can be re-attached to it). Call before Run.
  absl::Status Restore(const std::map<std::string, model::TaskState>& states,
                       const std::map<std::string, taskrunner::LocalState>& local);
  // Runs the allocation until every task is dead. Call at most once.
  asio::awaitable<void> Run();
  // Queues a newer server version of the allocation (older ones are dropped).
  void Update(std::shared_ptr<const model::Allocation> alloc);
  // Kills the tasks, waits for them, runs destroy hooks (removing the alloc dir).
  // Idempotent.
  asio::awaitable<void> Destroy();
  // Agent shutdown: Run ends, tasks keep running. No-op once Destroy was launched.
  asio::awaitable<void> Shutdown();

  // User-requested restarts (reference §6.5): one task, or every running task. NotFound
  // for an unknown task, FailedPrecondition when the alloc is terminal or the task is
  // not running.
  absl::Status RestartTask(const std::string& task, const std::string& reason);
  absl::Status RestartRunning(const std::string& reason);
  // Restarts every task but poststop ones, dead or running, from the first lifecycle
  // stage (prestart tasks run again before main tasks).
  absl::Status RestartAll(const std::string& reason);
  // Sends `signal` to one task, or to every running task when `task` is empty.
  absl::Status Signal(const std::string& task, const std::string& signal);

  const std::string& id() const { return id_; }
  std::shared_ptr<const model::Allocation> alloc() const { return alloc_; }
  allocdir::AllocDir& alloc_dir() { return alloc_dir_; }
  taskrunner::TaskRunner* task_runner(const std::string& name);
  std::vector<taskrunner::TaskRunner*> task_runners();
  model::AllocClientUpdate ClientUpdate() const;
  // The tasks' latest resource samples and their sum.
  AllocUsage Usage() const;
  // Run() has returned and none of the runner's coroutines is still suspended: the
  // owner may destroy it.
  bool run_done() const { return run_exited_.IsSet(); }
  bool destroyed() const { return destroyed_.IsSet(); }
  // The client's view of the alloc (task states, client status, health) as last
  // reported, latest only; closed when the runner is destroyed.
  AllocBroadcaster& broadcaster() { return broadcaster_; }
  // Prerun has finished (or was skipped): the previous allocation's data is no longer
  // needed by this one.
  bool prerun_done() const { return prerun_done_; }
  bool IsWaiting() const { return prev_alloc_->IsWaiting(); }
  bool IsMigrating() const { return prev_alloc_->IsMigrating(); }

 private:
  // Task states changed: queues one pass of HandleTaskStates on the loop, which covers
  // every change made before it runs (none once the last pass after Run's tasks ended).
  // A posted pass rather than a coroutine waiting for changes: that one would be held,
  // with its frame, for as long as the allocation runs.
  void OnTaskStateChanged();
  void PostTaskStatePass();
  void HandleTaskStates();
  // Whether this allocation's health is to be watched: a running service allocation.
  bool WatchesHealth() const;
  // Decides the allocation's health (HealthTracker) and reports it once per deployment
  // it is in, as its DeploymentStatus: judged by the group's update block in a
  // deployment (not at all with health_check "manual"), else by its migrate block (or
  // Nomad's default) for drains. Ends after StopHealthWatch.
  asio::awaitable<void> WatchHealth();
  void StopHealthWatch();
  // Applies the queued updates, then ends; started by the first update queued while
  // none runs (updates are rare: no coroutine waits for them meanwhile).
  void StartUpdateHandler();
  asio::awaitable<void> HandleAllocUpdates();
  // Kill order (§6.6): leader alone first, then other main tasks together, then
  // sidecars. Poststop tasks are left to run once the rest is dead, unless
  // `include_poststop` (Destroy). `reason_event` (e.g. "Sibling Task Failed") is emitted
  // to live tasks first.
  asio::awaitable<void> KillTasks(std::optional<model::TaskEvent> reason_event,
                                  bool include_poststop = false);
  model::TaskEvent KillingEvent(const taskrunner::TaskRunner& tr) const;
  void ReportState();
  // Neither stopping nor finished: user restarts are allowed.
  bool Restartable() const;
  // Hook phases (alloc_runner_hooks.cc). Prerun returns the failure reason.
  asio::awaitable<std::optional<std::string>> RunPrerunHooks();
  asio::awaitable<void> RunUpdateHooks(std::shared_ptr<const model::Allocation> alloc);
  asio::awaitable<void> RunPostrunHooks();
  asio::awaitable<void> RunDestroyHooks();
  asio::awaitable<void> RunPreKillHooks();
  asio::awaitable<void> RunShutdownHooks();
  // Runs `call(hook)` for every hook, logging failures (all phases but prerun).
  template <typename Call>
  asio::awaitable<void> RunAllHooks(const char* phase, Call call);

  asio::any_io_executor executor_;
  AllocRunnerConfig config_;
  const std::string id_;
  std::shared_ptr<const model::Allocation> alloc_;
  allocdir::AllocDir alloc_dir_;
  std::unique_ptr<allocwatcher::PrevAllocWatcher> prev_alloc_;
  // Cancelled when the alloc is stopped, destroyed or shut down: ends prerun waits.
  common::CancellationScopePtr prerun_cancel_;
  std::vector<AllocHookPtr> hooks_;
  AllocBroadcaster broadcaster_;
  std::unique_ptr<LifecycleCoordinator> coordinator_;
  // Cancelled when an update carries DesiredTransition.NoShutdownDelay.
  common::CancellationScopePtr skip_shutdown_delay_;
  std::vector<std::unique_ptr<taskrunner::TaskRunner>> runners_;
  bool task_state_pass_queued_ = false;
  bool has_sidecars_ = false;  // of the group as it was when the runner was made
  common::Mailbox<std::shared_ptr<const model::Allocation>> updates_;
  common::Event run_done_;            // every task is dead
  common::Event state_handler_done_;  // the last pass, after run_done_, has run
  bool update_handler_running_ = false;
  common::Notifier update_handler_idle_;
  common::Event run_exited_;  // set as Run()'s very last action
  common::Event destroyed_;
  bool run_launched_ = false;
  bool destroy_launched_ = false;
  bool shutdown_launched_ = false;
  bool prerun_done_ = false;
  bool killing_ = false;
  // Also what the broadcaster holds: one copy for both.
  ReportPtr last_reported_;
  // The health reported for a deployment or a drain (none until decided), and the
  // deployment it was judged for (empty: a drain).
  std::optional<model::AllocDeploymentStatus> health_;
  std::string health_deployment_;
  // Task states changed, or the watch is to end (StopHealthWatch). One notifier for
  // both, so the watch, which lasts as long as the allocation runs, waits on it alone.
  common::Notifier health_check_;
  bool health_stopped_ = false;
  common::Event health_done_;
};

}  // namespace drover::allocrunner
