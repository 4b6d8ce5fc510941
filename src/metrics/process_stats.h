// What a process costs the node, read from /proc: for the agent's runtime metrics and
// for the density benchmark, which reads the agent's, the supervisor's and the
// reaper's.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace drover::metrics {

struct ProcessStats {
  uint64_t rss_bytes = 0;
  uint64_t threads = 0;
  uint64_t open_fds = 0;
  double cpu_seconds = 0;  // user + system since the process started
};

// /proc/<pid>/stat and /proc/<pid>/fd. NotFound when the process is gone.
absl::StatusOr<ProcessStats> ReadProcessStats(pid_t pid);

}  // namespace drover::metrics
