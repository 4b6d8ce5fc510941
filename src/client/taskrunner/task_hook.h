// Task-level hooks (reference §3.3): the steps around a task's start, exit and stop
// that are not the driver's business (task dir, logs, stats, payloads, ...). One hook
// per file; every phase defaults to a no-op, so a hook overrides only what it needs.
//
// The TaskRunner calls hooks in registration order, on the control loop:
//   Prestart   before every (re)start; an error is a start error (restart policy
//              decides; recoverability is kept). Skipped for a hook whose persisted
//              state says it is done, but its persisted env is re-applied.
//   Poststart  after the driver started the task; errors become events, not failures.
//   Exited     after every exit of the task (restarting or not).
//   PreKill    before the runner stops the task for a kill or a restart.
//   Update     on every non-terminal update of the allocation.
//   Stop       once, when the runner finishes (not on agent shutdown). Must be
//              idempotent and work without a Prestart (e.g. a restored dead task).
//   Shutdown   on agent shutdown, when the task is left running.
// A hook that throws is treated as one that returned an error: the runner is never left
// half-way through a phase.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

#include "client/allocdir/alloc_dir.h"
#include "common/asio.h"
#include "drivers/driver.h"
#include "model/allocation.h"
#include "model/task_state.h"

namespace drover::taskrunner {

// What one hook keeps across task restarts and agent restarts (reference §3.3).
struct HookState {
  bool prestart_done = false;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> env;
  friend bool operator==(const HookState&, const HookState&) = default;
};

// Everything the task runner must persist to pick a task up again after an agent
// restart: hook state, the driver handle of the running task, and whether Run finished.
// The restart policy's window (RestartTracker): when it began and how many restarts it
// has seen, kept across agent restarts so that a crash does not grant new attempts.
struct RestartWindow {
  int64_t start_unix_nanos = 0;
  int count = 0;
  friend bool operator==(const RestartWindow&, const RestartWindow&) = default;
};

struct LocalState {
  std::map<std::string, HookState> hooks;
  std::optional<drivers::TaskHandle> handle;
  bool run_complete = false;
  std::optional<RestartWindow> restarts;
  friend bool operator==(const LocalState&, const LocalState&) = default;
};

struct PrestartRequest {
  const model::Allocation* alloc = nullptr;
  const model::Task* task = nullptr;
  allocdir::AllocDir* alloc_dir = nullptr;
  allocdir::TaskDir task_dir;  // paths; built by the task_dir hook
  // This hook's persisted data from an earlier prestart (empty the first time).
  std::map<std::string, std::string> previous_state;
};

struct PrestartResponse {
  // Added to the task's environment (later hooks win on a clash).
  std::map<std::string, std::string> env;
  // Persisted as this hook's data; copy forward what should be kept from
  // previous_state.
  std::map<std::string, std::string> state;
  // Added to what the driver mounts and exposes (appended: hooks never replace one
  // another's mounts). Not persisted: a hook that contributes them must not be done.
  std::vector<drivers::MountConfig> mounts;
  std::vector<drivers::DeviceConfig> devices;
  // The hook need not run again for this task (its env is still re-applied).
  bool done = false;
};

struct PoststartRequest {
  drivers::Driver* driver = nullptr;
  std::string task_id;  // the driver's id of the running instance
};

struct UpdateRequest {
  std::shared_ptr<const model::Allocation> alloc;
};

struct StopRequest {
  const std::map<std::string, std::string>* existing_state = nullptr;  // read-only
  allocdir::TaskDir task_dir;
};

class TaskHook {
 public:
  virtual ~TaskHook() = default;
  TaskHook() = default;
  TaskHook(const TaskHook&) = delete;
  TaskHook& operator=(const TaskHook&) = delete;

  virtual std::string_view Name() const = 0;

  virtual asio::awaitable<absl::Status> Prestart(const PrestartRequest& /*req*/,
                                                 PrestartResponse* /*resp*/) {
    co_return absl::OkStatus();
  }
  virtual asio::awaitable<absl::Status> Poststart(const PoststartRequest& /*req*/) {
    co_return absl::OkStatus();
  }
  virtual asio::awaitable<absl::Status> Exited() { co_return absl::OkStatus(); }
  virtual asio::awaitable<absl::Status> Update(const UpdateRequest& /*req*/) {
    co_return absl::OkStatus();
  }
  virtual asio::awaitable<absl::Status> Stop(const StopRequest& /*req*/) {
    co_return absl::OkStatus();
  }
  virtual void PreKill() {}
  virtual asio::awaitable<void> Shutdown() { co_return; }
};

using TaskHookPtr = std::unique_ptr<TaskHook>;

}  // namespace drover::taskrunner
