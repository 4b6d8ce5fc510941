// What the docker driver keeps per task (internal to the driver's .cc files), and the
// per-container state file that recovery reads.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

#include "common/cancellation.h"
#include "common/event.h"
#include "drivers/docker/docker_driver.h"
#include "drivers/docker/log_stream.h"

namespace drover::drivers::docker {

// Written at start and as the task's output is copied; read by RecoverTask.
struct TaskState {
  std::string task_id;
  std::string container;
  std::string image_id;
  TaskLogConfig logs;
  LogCursor cursor;
  // Where its shared bind sources are pinned ("" for none): unmounted on removal.
  std::string pins;
};

std::string EncodeTaskState(const TaskState& state);
absl::StatusOr<TaskState> DecodeTaskState(std::string_view text);
// Atomically (a temp file renamed over it). Blocking: on the pool.
absl::Status WriteTaskState(const std::filesystem::path& path, const TaskState& state);
absl::StatusOr<TaskState> ReadTaskState(const std::filesystem::path& path);

struct DockerDriver::Task {
  Task(asio::any_io_executor executor, const common::CancellationScopePtr& parent)
      : exited(executor), logs_done(executor), scope(parent->Child()), saved(executor) {}

  TaskState state;
  std::string name;  // the task's name
  Time started_at{};
  Time completed_at{};
  std::optional<ExitResult> result;
  common::Event exited;
  common::Event logs_done;
  // Cancelled when the task is destroyed or the driver shuts down.
  common::CancellationScopePtr scope;
  // The state file: rewritten when the cursor moves, one write at a time.
  bool removed = false;  // Remove began: the state file goes, and is not written again
  bool saving = false;
  bool save_again = false;
  common::Notifier saved;  // a write ended (Remove waits for the last one)
  std::optional<TaskResourceUsage> usage;
  bool sampling = false;
};

}  // namespace drover::drivers::docker
