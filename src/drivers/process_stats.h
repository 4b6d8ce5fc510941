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

// `root` and every live descendant of it, found through /proc/<pid>/task/*/children,
// so the cost follows the size of the tree, not the number of processes on the host
// (it runs for every task every second). A descendant whose parent died is re-parented
// away and no longer counted.
std::vector<ProcSample> ProcessTreeSamples(int root);

// Clock ticks per second for the tick counts above.
long ClockTicksPerSecond();

}  // namespace drover::drivers
