// The node's one stats sampler: every running task's resource usage, sampled from its
// driver each interval (reference §3.5) by one loop with one timer. A coroutine, timer
// and cancellation race per task cost most of an idle agent's CPU at 1,000 tasks, and
// kilobytes of coroutine frames each.
//
// Lives on the control loop; not thread-safe. A pass over many tasks yields to the loop
// every few dozen samples, so it never holds the loop for long.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/cancellation.h"
#include "common/clock.h"
#include "drivers/driver.h"

namespace drover::taskrunner {

class StatsSampler : public std::enable_shared_from_this<StatsSampler> {
 public:
  // Gets each sample. Must not call Add or Remove.
  using Sink = std::function<void(drivers::TaskResourceUsage)>;

  static std::shared_ptr<StatsSampler> Create(asio::any_io_executor executor, common::Clock& clock,
                                              common::Duration interval);

  // Samples the task now, then every interval until Remove (or until its driver says
  // it cannot report usage). Returns the key for Remove.
  uint64_t Add(drivers::Driver* driver, std::string task_id, Sink sink);
  // Stops sampling the task: its sink is not called after this. Unknown keys are
  // ignored. The loop ends once no task is left.
  void Remove(uint64_t key);

  size_t size() const { return tasks_.size(); }
  common::Duration interval() const { return interval_; }

  StatsSampler(asio::any_io_executor executor, common::Clock& clock, common::Duration interval);

 private:
  struct Entry {
    drivers::Driver* driver = nullptr;
    std::string task_id;
    Sink sink;
  };

  // False when the driver cannot report usage at all (nothing more to sample).
  static bool SampleOne(const Entry& e);
  asio::awaitable<void> Loop(std::shared_ptr<StatsSampler> self);

  asio::any_io_executor executor_;
  common::Clock& clock_;
  common::Duration interval_;
  std::map<uint64_t, Entry> tasks_;
  uint64_t next_key_ = 1;
  bool looping_ = false;
  // Cancelled when the last task is removed, to wake the loop so it ends; replaced
  // when a task is added again.
  common::CancellationScopePtr idle_;
};

}  // namespace drover::taskrunner
