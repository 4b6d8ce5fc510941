// The supervisor's only on-disk state: every task it holds, with its exit once seen,
// in `<state dir>/tasks.json` and `<state dir>/tasks.journal` (0600, in a 0700 dir). A
// task stays until the agent acknowledges its exit, so an exit that happens while the
// agent is down is reported when it reconnects; a new supervisor reads the table to
// adopt running tasks.
//
// A change appends one line to the journal ({"put": task} or {"remove": id}), so a
// spawn costs the same with 1,000 tasks held as with one. When the journal outgrows the
// table (64 KiB, or twice the table's last size), the table is written again (write
// aside, rename over) and the journal emptied. Opening reads the table and replays the
// journal over it; replaying is idempotent (a task's last line decides it), so a crash
// between the rename and the truncation loses nothing. The journal's first line names
// the boot that wrote it. A last line cut short by a crash
// is dropped (its change was never acknowledged). Nothing is fsynced: only a machine
// crash could lose a write, and that kills the tasks too. The table records the kernel's
// boot id, so tasks of an earlier boot are known dead (their pid and start time may
// match a new process), and files torn by a machine crash are dropped. Not thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/unique_fd.h"
#include "supervisor/protocol.h"

namespace drover::supervisor {

class TaskTable {
 public:
  // Creates the dir (0700) if needed and loads the table (empty if none).
  static absl::StatusOr<TaskTable> Open(const std::filesystem::path& state_dir);

  const std::map<std::string, TaskInfo>& tasks() const { return tasks_; }
  // A record stays at one address until it is removed: Put replaces it in place.
  const TaskInfo* Find(const std::string& task_id) const;
  // Adds or replaces a task and persists the change. The table holds the change even
  // when persisting it fails.
  absl::Status Put(const TaskInfo& task);
  // Forgets a task (even when persisting that fails) and persists the change. OK if
  // unknown.
  absl::Status Remove(const std::string& task_id);

 private:
  explicit TaskTable(std::filesystem::path dir)
      : file_(dir / "tasks.json"), journal_file_(dir / "tasks.journal") {}
  // Applies the journal's lines to tasks_; sets `this_boot` to whether its header names
  // this boot (a damaged line of an earlier boot's journal is that crash's, not an
  // error).
  absl::Status Replay(bool& this_boot);
  absl::Status Append(const std::string& line);
  // Writes the whole table and empties the journal.
  absl::Status Save();

  std::filesystem::path file_;
  std::filesystem::path journal_file_;
  common::UniqueFd journal_;
  size_t journal_bytes_ = 0;
  bool dirty_ = false;      // the journal may end in a partial line: fold before appending
  size_t table_bytes_ = 0;  // the table's size when last written
  std::string boot_id_;
  std::map<std::string, TaskInfo> tasks_;
};

}  // namespace drover::supervisor
