// Resource usage of plain processes, from /proc (for drivers without cgroups, and
// for per-process breakdowns).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace drover::drivers {

struct ProcSample {
  int pid = 0;
  int pgid = 0;
  uint64_t utime_ticks = 0;  // clock ticks (sysconf(_SC_CLK_TCK))
  uint64_t stime_ticks = 0;
  uint64_t num_threads = 0;
  uint64_t start_ticks = 0;  // since boot: with the pid, the process's identity
  uint64_t rss_bytes = 0;
};

// /proc/<pid>/stat, or nullopt if there is no such process.
std::optional<ProcSample> ReadProcSample(int pid);

// One process's /proc files kept open: its stat and its main thread's children list,
// read again from offset 0 for each sample. Sampling 1,000 tasks a second spent most of
// its time looking up, opening and closing these paths. The files stay bound to the
// process they were opened for: once it is gone they read nothing, even if its pid has
// been reused meanwhile. Move-only; closes them when destroyed.
class ProcFiles {
 public:
  ProcFiles() = default;
  // A file that cannot be opened stays closed, and is read by path instead.
  explicit ProcFiles(int pid);
  ~ProcFiles();
  ProcFiles(ProcFiles&& other) noexcept;
  ProcFiles& operator=(ProcFiles&& other) noexcept;
  ProcFiles(const ProcFiles&) = delete;
  ProcFiles& operator=(const ProcFiles&) = delete;

  int pid() const { return pid_; }
  int stat_fd() const { return stat_; }
  int children_fd() const { return children_; }

 private:
  void Close();

  int pid_ = 0;
  int stat_ = -1;
  int children_ = -1;
};

// `root` and every live descendant of it, found through /proc/<pid>/task/*/children,
// so the cost follows the size of the tree, not the number of processes on the host
// (it runs for every task every second). A descendant whose parent died is re-parented
// away and no longer counted. `root_files`, when given, are root's kept-open files.
std::vector<ProcSample> ProcessTreeSamples(int root, const ProcFiles* root_files = nullptr);

// Clock ticks per second for the tick counts above.
long ClockTicksPerSecond();

}  // namespace drover::drivers
