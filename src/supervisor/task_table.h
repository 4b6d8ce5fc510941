// The supervisor's only on-disk state: every task it holds, with its exit once seen,
// in `<state dir>/tasks.json` (0600, in a 0700 dir). A task stays until the agent
// acknowledges its exit, so an exit that happens while the agent is down is reported
// when it reconnects; a new supervisor reads the table to adopt running tasks.
//
// Every change rewrites the file atomically (write, fsync, rename, fsync dir): after a
// crash the table is the old or the new version, never a torn one. Not thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "supervisor/protocol.h"

namespace drover::supervisor {

class TaskTable {
 public:
  // Creates the dir (0700) if needed and loads the table (empty if none).
  static absl::StatusOr<TaskTable> Open(const std::filesystem::path& state_dir);

  const std::map<std::string, TaskInfo>& tasks() const { return tasks_; }
  const TaskInfo* Find(const std::string& task_id) const;
  // Adds or replaces a task and persists the table.
  absl::Status Put(const TaskInfo& task);
  // Forgets a task and persists the table. OK if unknown.
  absl::Status Remove(const std::string& task_id);

 private:
  explicit TaskTable(std::filesystem::path file) : file_(std::move(file)) {}
  absl::Status Save();

  std::filesystem::path file_;
  std::map<std::string, TaskInfo> tasks_;
};

}  // namespace drover::supervisor
