// Starting and identifying task processes (the supervisor's side of the system calls).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "supervisor/protocol.h"

namespace drover::supervisor {

// Process start time in clock ticks since boot (/proc/<pid>/stat field 22), or 0 if
// there is no such process. With the pid it identifies a process; pids are reused.
uint64_t ProcessStartTicks(int pid);

// Fields of /proc/<pid>/stat, read once; zeros if there is no such process.
struct ProcessStat {
  int parent = 0;
  uint64_t start_ticks = 0;  // as ProcessStartTicks
};
ProcessStat ReadProcessStat(int pid);

// /proc/<pid>/stat's parent pid, or 0 if there is no such process.
int ParentOf(int pid);
// Whether `pid` is a drover-reaper (by its command name).
bool IsReaper(int pid);
// Whether `pid`'s parent is a drover-reaper: its exit will be journaled.
bool ReaperOf(int pid);

// pidfd_open(2): a descriptor that becomes readable when the process exits; -1 on error.
int PidfdOpen(int pid);

// Reserves the low descriptor numbers SpawnProcess clones with (so that a child copies
// only those, not every descriptor the caller holds). Call it early, while few
// descriptors are open; SpawnProcess reserves them on first use otherwise.
void ReserveSpawnSlots();

struct SpawnedProcess {
  int pid = 0;
  uint64_t start_ticks = 0;
  int parent = 0;  // read with start_ticks, while the child cannot have exited
};

// Forks and execs `spec` in a new session (so its process group can be signalled as a
// whole): stdin /dev/null, stdout/stderr onto `stdout_fd`/`stderr_fd` (-1: /dev/null),
// cwd, umask and user applied, every other descriptor closed. Exec failures (missing
// binary, not executable, unknown user) are reported as errors, not as a task that
// exits 127. The caller keeps ownership of the two descriptors.
// REQUIRES: the caller is single-threaded (fork).
// With `spec.isolation` the task is cloned into new namespaces and chrooted (see
// IsolationSpec); it writes "0" into each of `cgroup_fds` (open cgroup.procs files)
// before anything else, so it runs inside its cgroup from the start.
// With `parent_reaps` the task is the caller's parent's child (CLONE_PARENT): under
// drover-reaper, which journals its exit (exit_journal.h); the caller never reaps it.
// Either way its start time is read while it cannot have exited yet, and its
// oom_score_adj is set back to 0.
// `before_run`, when given, is called with the child's identity before the child may
// run anything: when it fails, the child exits (127) without running the task, and that
// error is returned. The supervisor records the task there, so that a task never runs
// unrecorded, whenever the supervisor dies.
absl::StatusOr<SpawnedProcess> SpawnProcess(
    const SpawnSpec& spec, int stdout_fd, int stderr_fd, const std::vector<int>& cgroup_fds = {},
    bool parent_reaps = false,
    const std::function<absl::Status(const SpawnedProcess&)>& before_run = nullptr);

}  // namespace drover::supervisor
