#include "client/allocrunner/lifecycle_coordinator.h"

#include <memory>
#include <set>

namespace drover::allocrunner {

LifecycleStage StageOf(const model::Task& task) {
  if (task.IsPrestart()) {
    return task.lifecycle->sidecar ? LifecycleStage::kPrestartSidecar
                                   : LifecycleStage::kPrestartEphemeral;
  }
  if (task.IsPoststart()) {
    return task.lifecycle->sidecar ? LifecycleStage::kPoststartSidecar
                                   : LifecycleStage::kPoststartEphemeral;
  }
  if (task.IsPoststop()) {
    return LifecycleStage::kPoststop;
  }
  return LifecycleStage::kMain;
}

LifecycleCoordinator::LifecycleCoordinator(asio::any_io_executor executor,
                                           const std::vector<model::Task>& tasks) {
  for (const model::Task& t : tasks) {
    const LifecycleStage s = StageOf(t);
    stage_of_[t.name] = s;
    if (!gates_.contains(s))
      gates_.emplace(s, std::make_unique<Gate>(executor));
  }
}

namespace {

const model::TaskState* Find(const std::map<std::string, model::TaskState>& states,
                             const std::string& name) {
  auto it = states.find(name);
  return it == states.end() ? nullptr : &it->second;
}

bool IsState(const std::map<std::string, model::TaskState>& states, const std::string& name,
             const char* want) {
  const model::TaskState* s = Find(states, name);
  return s == nullptr ? std::string(want) == model::kTaskStatePending : s->state == want;
}

}  // namespace

bool LifecycleCoordinator::Step(const std::map<std::string, model::TaskState>& states) {
  // Alloc done: every non-poststop task dead → poststop, from any state.
  bool all_done = true;
  for (const auto& [name, stage] : stage_of_) {
    if (stage != LifecycleStage::kPoststop && !IsState(states, name, model::kTaskStateDead)) {
      all_done = false;
    }
  }
  if (all_done && state_ != CoordinatorState::kPoststop) {
    state_ = CoordinatorState::kPoststop;
    return true;
  }
  auto all = [&](LifecycleStage stage, auto pred) {
    for (const auto& [name, s] : stage_of_) {
      if (s == stage && !pred(name))
        return false;
    }
    return true;
  };
  switch (state_) {
    case CoordinatorState::kInit: {
      bool all_pending = true;
      for (const auto& [name, stage] : stage_of_) {
        all_pending = all_pending && IsState(states, name, model::kTaskStatePending);
      }
      if (all_pending) {
        state_ = CoordinatorState::kPrestart;
        return true;
      }
      return false;
    }
    case CoordinatorState::kPrestart: {
      const bool ephemeral_done = all(LifecycleStage::kPrestartEphemeral, [&](const auto& n) {
        const model::TaskState* s = Find(states, n);
        return s != nullptr && s->state == model::kTaskStateDead && !s->failed;
      });
      const bool sidecars_up = all(LifecycleStage::kPrestartSidecar, [&](const auto& n) {
        return IsState(states, n, model::kTaskStateRunning);
      });
      if (ephemeral_done && sidecars_up) {
        state_ = CoordinatorState::kMain;
        return true;
      }
      return false;
    }
    case CoordinatorState::kMain: {
      const bool none_pending = all(LifecycleStage::kMain, [&](const auto& n) {
        return !IsState(states, n, model::kTaskStatePending);
      });
      if (none_pending) {
        state_ = CoordinatorState::kPoststart;
        return true;
      }
      return false;
    }
    case CoordinatorState::kPoststart: {
      const bool ephemeral_dead = all(LifecycleStage::kPoststartEphemeral, [&](const auto& n) {
        return IsState(states, n, model::kTaskStateDead);
      });
      if (ephemeral_dead) {
        state_ = CoordinatorState::kWaitAlloc;
        return true;
      }
      return false;
    }
    case CoordinatorState::kWaitAlloc:
    case CoordinatorState::kPoststop:
      return false;
  }
  return false;
}

void LifecycleCoordinator::ApplyGates() {
  std::set<LifecycleStage> open;
  switch (state_) {
    case CoordinatorState::kInit:
      break;
    case CoordinatorState::kPrestart:
      open = {LifecycleStage::kPrestartEphemeral, LifecycleStage::kPrestartSidecar};
      break;
    case CoordinatorState::kMain:
      open = {LifecycleStage::kPrestartSidecar, LifecycleStage::kMain};
      break;
    case CoordinatorState::kPoststart:
      open = {LifecycleStage::kPrestartSidecar, LifecycleStage::kMain,
              LifecycleStage::kPoststartEphemeral, LifecycleStage::kPoststartSidecar};
      break;
    case CoordinatorState::kWaitAlloc:
      open = {LifecycleStage::kPrestartSidecar, LifecycleStage::kMain,
              LifecycleStage::kPoststartSidecar};
      break;
    case CoordinatorState::kPoststop:
      open = {LifecycleStage::kPoststop};
      break;
  }
  for (auto& [stage, gate] : gates_) {
    const bool now_open = open.contains(stage);
    if (now_open && !gate->open) {
      gate->timer.cancel();
    }
    gate->open = now_open;
  }
}

void LifecycleCoordinator::TaskStateUpdated(const std::map<std::string, model::TaskState>& states) {
  while (Step(states)) {
  }
  ApplyGates();
}

void LifecycleCoordinator::Restore(const std::map<std::string, model::TaskState>& states) {
  state_ = CoordinatorState::kPrestart;
  TaskStateUpdated(states);
}

void LifecycleCoordinator::Restart() {
  state_ = CoordinatorState::kInit;
  ApplyGates();
}

bool LifecycleCoordinator::IsOpen(const std::string& task) const {
  auto it = stage_of_.find(task);
  return it != stage_of_.end() && gates_.at(it->second)->open;
}

asio::awaitable<void> LifecycleCoordinator::WaitStart(std::string task) {
  auto it = stage_of_.find(task);
  if (it == stage_of_.end())
    co_return;
  Gate& gate = *gates_.at(it->second);
  while (!gate.open) {
    co_await gate.timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace drover::allocrunner
