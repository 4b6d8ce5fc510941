// raw_exec: runs the task's command directly on the host, with no isolation, as the
// agent's user. The process gets its own session (so signals reach its whole process
// group) and its stdout/stderr appended to the task's log files. Exits are observed
// through a pidfd on the control loop. (The node supervisor of DESIGN.md §6 takes over
// spawning and reaping in its own issue; the interface stays.)
//
// Config: command (required), args (list of strings).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/event.h"
#include "drivers/driver.h"

namespace drover::drivers {

class RawExecDriver final : public Driver {
 public:
  // `clock` must outlive the driver.
  RawExecDriver(asio::any_io_executor executor, common::Clock& clock);
  ~RawExecDriver() override;

  // drivers::Driver
  std::string Name() const override { return "raw_exec"; }
  Capabilities GetCapabilities() const override;
  DriverFingerprint Fingerprint() const override;
  absl::Status RecoverTask(const TaskHandle& handle) override;
  asio::awaitable<absl::StatusOr<TaskHandle>> StartTask(const TaskConfig& config) override;
  asio::awaitable<absl::StatusOr<ExitResult>> WaitTask(const std::string& task_id) override;
  asio::awaitable<absl::Status> StopTask(const std::string& task_id, Duration timeout,
                                         const std::string& signal) override;
  absl::Status DestroyTask(const std::string& task_id, bool force) override;
  absl::StatusOr<TaskStatus> InspectTask(const std::string& task_id) const override;
  absl::StatusOr<TaskResourceUsage> TaskStats(const std::string& task_id) override;
  absl::Status SignalTask(const std::string& task_id, const std::string& signal) override;

  // Reads /proc/<pid>/stat field 22 (start time in clock ticks); 0 if unreadable.
  static uint64_t ProcessStartTicks(int pid);

 private:
  struct Task;
  asio::awaitable<void> WatchExit(Task* task);
  Task* Find(const std::string& task_id) const;

  asio::any_io_executor executor_;
  common::Clock& clock_;
  std::map<std::string, std::unique_ptr<Task>> tasks_;
};

}  // namespace drover::drivers
