// The task lifecycle coordinator (reference §2.7): decides when each task of an
// allocation may (re)start according to its `lifecycle { hook, sidecar }` block.
//
// Tasks fall into stages: prestart-ephemeral, prestart-sidecar, main, poststart-
// ephemeral, poststart-sidecar, poststop. Each stage has a gate; a TaskRunner waits on
// its stage's gate before every start. The coordinator's state machine opens and closes
// gates from the task states it is fed:
//
//   Init ──all pending──► Prestart ──prestarts done/running──► Main ──no main pending──►
//   Poststart ──ephemeral poststarts dead──► WaitAlloc ──► Poststop
//   (any state ──every non-poststop task dead──► Poststop)
//
// Lives on the control loop; not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/asio.h"
#include "model/job.h"
#include "model/task_state.h"

namespace drover::allocrunner {

enum class LifecycleStage {
  kPrestartEphemeral,
  kPrestartSidecar,
  kMain,
  kPoststartEphemeral,
  kPoststartSidecar,
  kPoststop,
};

enum class CoordinatorState { kInit, kPrestart, kMain, kPoststart, kWaitAlloc, kPoststop };

LifecycleStage StageOf(const model::Task& task);

class LifecycleCoordinator {
 public:
  LifecycleCoordinator(asio::any_io_executor executor, const std::vector<model::Task>& tasks);
  LifecycleCoordinator(const LifecycleCoordinator&) = delete;
  LifecycleCoordinator& operator=(const LifecycleCoordinator&) = delete;

  // Feeds the current task states; re-evaluates the state machine until it is stable
  // and opens/closes gates accordingly.
  void TaskStateUpdated(const std::map<std::string, model::TaskState>& states);
  // After an agent restart: start from Prestart (restored tasks are not pending), then
  // replay `states`.
  void Restore(const std::map<std::string, model::TaskState>& states);
  // Restart of every task: back to Init.
  void Restart();

  // Completes once the gate of `task`'s stage is open (at once if it is).
  asio::awaitable<void> WaitStart(std::string task);
  bool IsOpen(const std::string& task) const;
  CoordinatorState state() const { return state_; }

 private:
  struct Gate {
    explicit Gate(asio::any_io_executor ex) : timer(ex, asio::steady_timer::time_point::max()) {}
    bool open = false;
    asio::steady_timer timer;  // cancelled to wake waiters when the gate opens
  };
  bool Step(const std::map<std::string, model::TaskState>& states);
  void ApplyGates();

  std::map<std::string, LifecycleStage> stage_of_;
  // Only the stages that have tasks: most allocations have one task, in one stage,
  // and a gate is a timer.
  std::map<LifecycleStage, std::unique_ptr<Gate>> gates_;
  CoordinatorState state_ = CoordinatorState::kInit;
};

}  // namespace drover::allocrunner
