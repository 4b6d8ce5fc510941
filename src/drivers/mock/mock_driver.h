// A scripted driver for tests and demos (after Nomad's drivers/mock): no process is
// started; the task "runs" on the driver's clock as its config says.
//
// Config keys: run_for (duration; how long the task runs before exiting, default 0 =
// exit at once), exit_code, exit_signal, exit_err_msg, start_error (string: StartTask
// fails with it), start_error_recoverable (bool), start_block_for (duration),
// kill_after (duration the task ignores a stop request for; past the stop timeout it
// is force-killed), stdout_string (written to the stdout log at start).
// Durations are Go strings ("10s") or integer nanoseconds.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/event.h"
#include "drivers/driver.h"

namespace drover::drivers {

class MockDriver final : public Driver {
 public:
  // `clock` must outlive the driver.
  MockDriver(asio::any_io_executor executor, common::Clock& clock);
  ~MockDriver() override;

  // drivers::Driver
  std::string Name() const override { return "mock_driver"; }
  Capabilities GetCapabilities() const override;
  DriverFingerprint Fingerprint() const override;
  absl::Status RecoverTask(const TaskHandle& handle) override;
  asio::awaitable<absl::StatusOr<TaskHandle>> StartTask(const TaskConfig& config) override;
  asio::awaitable<absl::StatusOr<ExitResult>> WaitTask(const std::string& task_id) override;
  bool CancelOnExit(const std::string& task_id,
                    const std::shared_ptr<common::CancellationScope>& scope) override;
  asio::awaitable<absl::Status> StopTask(const std::string& task_id, Duration timeout,
                                         const std::string& signal) override;
  absl::Status DestroyTask(const std::string& task_id, bool force) override;
  absl::StatusOr<TaskStatus> InspectTask(const std::string& task_id) const override;
  absl::StatusOr<TaskResourceUsage> TaskStats(const std::string& task_id) override;
  absl::Status SignalTask(const std::string& task_id, const std::string& signal) override;

  common::AsyncSemaphore* start_slots() override { return start_slots_.get(); }
  // From now on, at most `n` of this driver's tasks are prepared and started at once
  // (Driver::start_slots), as the supervised drivers do.
  void LimitStarts(int n) { start_slots_ = std::make_unique<common::AsyncSemaphore>(executor_, n); }

  // Number of StartTask calls that succeeded (for tests).
  int starts() const { return starts_; }
  // The configs of those starts, in order (for tests).
  const std::vector<TaskConfig>& started_configs() const { return started_configs_; }
  // What Fingerprint reports from now on (tests of driver health changes).
  void SetHealth(bool healthy, std::string description) {
    healthy_ = healthy;
    health_description_ = std::move(description);
  }
  // Signals delivered to `task_id` via SignalTask (for tests).
  std::vector<std::string> SignalsFor(const std::string& task_id) const;

 private:
  struct Task;
  asio::awaitable<void> RunTask(std::shared_ptr<Task> task);
  std::shared_ptr<Task> Find(const std::string& id) const;

  asio::any_io_executor executor_;
  common::Clock& clock_;
  std::map<std::string, std::shared_ptr<Task>> tasks_;
  int starts_ = 0;
  std::vector<TaskConfig> started_configs_;
  std::unique_ptr<common::AsyncSemaphore> start_slots_;
  bool healthy_ = true;
  std::string health_description_ = "Healthy";
};

}  // namespace drover::drivers
