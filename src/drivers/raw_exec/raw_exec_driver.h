// raw_exec: runs the task's command directly on the host, with no isolation, as the
// agent's user (or the task's `user`), through the node supervisor so the task
// outlives the agent. The process leads its own session, so signals reach everything
// it started; its stdout/stderr go to the task's rotated log files.
//
// Config: command (required; a path, relative paths from the task dir, or a name
// looked up in the task's PATH), args (list of strings).
#pragma once

#include <string>

#include "drivers/supervised/supervised_driver.h"

namespace drover::drivers {

class RawExecDriver final : public SupervisedDriver {
 public:
  // `clock` and `link` must outlive the driver.
  RawExecDriver(asio::any_io_executor executor, common::Clock& clock, SupervisorLink& link)
      : SupervisedDriver(std::move(executor), clock, link) {}

  std::string Name() const override { return "raw_exec"; }
  Capabilities GetCapabilities() const override;
  absl::StatusOr<TaskResourceUsage> TaskStats(const std::string& task_id) override;

 protected:
  absl::StatusOr<supervisor::SpawnSpec> BuildSpawnSpec(const TaskConfig& config) override;
};

}  // namespace drover::drivers
