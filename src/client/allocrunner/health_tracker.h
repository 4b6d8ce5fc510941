// HealthTracker: an allocation's health from its task states, as a node drain needs it
// (Nomad's alloc health watcher without service checks; the migrate block's
// health_check "checks" and "task_states" mean the same while Drover has no checks).
//
// Healthy once every task that should be running (main tasks and sidecars) has run
// without interruption, and every ephemeral prestart or poststart task has finished
// successfully, for min_healthy_time. Unhealthy at once when a task fails, or when
// healthy_deadline (counted from the tracker's start) passes first. A restart or any
// other change of state starts the healthy time again. Poststop tasks do not count.
// The verdict, once given, is final.
//
// Pure: the owner feeds it task states and the time, and wakes it at NextCheck().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "model/job.h"
#include "model/task_state.h"

namespace drover::allocrunner {

class HealthTracker {
 public:
  HealthTracker(const model::TaskGroup& group, const model::MigrateStrategy& strategy,
                common::Time start);

  // The verdict as of `now` given the current task states: true healthy, false
  // unhealthy, nullopt not decided yet.
  std::optional<bool> Observe(const std::map<std::string, model::TaskState>& states,
                              common::Time now);
  // When, with no change of task state, the verdict could next change: the end of the
  // healthy time being counted, or the deadline.
  common::Time NextCheck() const;

 private:
  // What a change of resets the healthy time: each task's state, restarts and start.
  using Signature = std::vector<std::tuple<std::string, uint64_t, common::Time>>;

  std::vector<const model::Task*> tasks_;  // those that count, in group order
  common::Duration min_healthy_time_;
  common::Time deadline_;
  std::optional<common::Time> healthy_since_;
  Signature since_signature_;
  std::optional<bool> verdict_;
};

}  // namespace drover::allocrunner
