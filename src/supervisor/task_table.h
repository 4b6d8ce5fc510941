// The supervisor's only on-disk state: every task it holds, with its exit once seen,
// in `<state dir>/tasks.json` (0600, in a 0700 dir). A task stays until the agent
// acknowledges its exit, so an exit that happens while the agent is down is reported
// when it reconnects; a new supervisor reads the table to adopt running tasks.
//
// Every change rewrites the file atomically (write aside, rename over): after a crash of
// the supervisor the table is the old or the new version, never a torn one. It is not
// fsynced: only a machine crash could lose a write, and that kills the tasks too. The
// table records the kernel's boot id, so tasks of an earlier boot are known dead (their
// pid and start time may match a new process), and a table torn by a machine crash is
// dropped. Not thread-safe.
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
  std::string boot_id_;
  std::map<std::string, TaskInfo> tasks_;
};

}  // namespace drover::supervisor
