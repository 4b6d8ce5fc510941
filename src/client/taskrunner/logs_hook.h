// logs: collects the task's stdout and stderr into alloc/logs/<task>.{stdout,stderr}.N,
// rotated by the task's `logs { max_files, max_file_size }` (reference §3.4 #8, our
// stand-in for Nomad's logmon until the node supervisor takes logging over).
//
// The driver writes into two FIFOs (alloc/logs/.<task>.stdout.fifo, ...); a collector
// on the control loop reads each and writes through a rotator on the blocking pool. The
// collectors start at the first prestart and stay up across task restarts, so one
// task's log is one continuous series of files; Stop and Shutdown drain and close
// them. With `logs { disabled = true }` the driver gets no paths (output discarded).
#pragma once

#include <memory>
#include <string>

#include "client/logs/log_collector.h"
#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

// Nomad's defaults for a task without a logs block.
inline constexpr int kDefaultLogMaxFiles = 10;
inline constexpr int kDefaultLogMaxFileSizeMb = 10;

class LogsHook : public TaskHook {
 public:
  LogsHook(asio::any_io_executor executor, asio::thread_pool& pool)
      : executor_(std::move(executor)), pool_(pool) {}
  std::string_view Name() const override { return "logs"; }

  // Where the driver must write the task's output ("" when logging is disabled).
  static std::string StdoutPath(const model::Task& task, const allocdir::AllocDir& dir);
  static std::string StderrPath(const model::Task& task, const allocdir::AllocDir& dir);

  asio::awaitable<absl::Status> Prestart(const PrestartRequest& req,
                                         PrestartResponse* resp) override;
  asio::awaitable<absl::Status> Stop(const StopRequest& req) override;
  asio::awaitable<void> Shutdown() override;

 private:
  asio::awaitable<void> StopCollectors();

  asio::any_io_executor executor_;
  asio::thread_pool& pool_;
  std::unique_ptr<logs::LogCollector> stdout_;
  std::unique_ptr<logs::LogCollector> stderr_;
};

}  // namespace drover::taskrunner
