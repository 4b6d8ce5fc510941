// Task cgroups: created and filled by the supervisor when it spawns an isolated task,
// read by the agent for resource usage. Both cgroup versions are supported:
//
//   v2 (unified; most hosts today): <root>/drover.slice/<name>/ with memory.max,
//      memory.low, cpu.weight, pids.max; OOM kills counted in memory.events.
//   v1 (one hierarchy per controller): <memory>/drover/<name>/ with
//      memory.limit_in_bytes and memory.soft_limit_in_bytes, <cpu>/drover/<name>/
//      cpu.shares, <pids>/drover/<name>/pids.max, <cpuacct>/drover/<name>/ for CPU
//      time; OOM kills counted in memory.oom_control.
//
// A hybrid host (v1 controllers plus an empty v2 hierarchy) is v1. Plain file I/O:
// call from the supervisor's thread or the agent's blocking pool, never while holding
// anything else up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace drover::supervisor {

enum class CgroupMode { kNone, kV1, kV2 };

struct CgroupLimits {
  int64_t memory_bytes = 0;       // hard limit; 0 = none
  int64_t memory_soft_bytes = 0;  // reclaimed down to first under pressure; 0 = none
  int64_t cpu_shares = 0;         // relative weight (Nomad's `cpu`, MHz); 0 = default
  int64_t pids_max = 0;           // 0 = no limit
  friend bool operator==(const CgroupLimits&, const CgroupLimits&) = default;
};

// Where the hierarchies are mounted.
struct CgroupLayout {
  CgroupMode mode = CgroupMode::kNone;
  std::filesystem::path v2_root;                          // e.g. /sys/fs/cgroup
  std::map<std::string, std::filesystem::path> v1_roots;  // controller -> mount point

  // From /proc/self/mountinfo: a cgroup2 mount whose cgroup.controllers lists
  // `memory` makes v2; else v1 if the memory controller is mounted; else none.
  static CgroupLayout Detect();
  static CgroupLayout Parse(const std::string& mountinfo);
  std::string Describe() const;
};

struct CgroupUsage {
  uint64_t memory_usage = 0;  // bytes charged now
  uint64_t memory_max_usage = 0;
  uint64_t rss = 0;  // anonymous memory
  uint64_t cache = 0;
  uint64_t swap = 0;
  double cpu_user_seconds = 0;
  double cpu_system_seconds = 0;
  double cpu_total_seconds = 0;
  uint64_t throttled_periods = 0;
  uint64_t throttled_time_ns = 0;
};

// A task id made into one cgroup path component ('/' is not allowed in a name).
std::string CgroupName(const std::string& task_id);

// v1 cpu.shares → v2 cpu.weight (1..10000), as systemd converts them.
int64_t SharesToWeight(int64_t shares);

class TaskCgroup {
 public:
  TaskCgroup(CgroupLayout layout, std::string name);

  // Creates the cgroup (and the drover parent, enabling the v2 controllers it needs)
  // and writes the limits. Named errors; on error nothing is left behind.
  absl::Status Create(const CgroupLimits& limits);
  // The cgroup.procs files a process must be written into to join (one per v1
  // hierarchy).
  std::vector<std::filesystem::path> ProcsFiles() const;
  bool Exists() const;
  // Whether the kernel OOM-killed anything in the cgroup.
  bool OomKilled() const;
  // Members of the cgroup (host pids).
  std::vector<int> Pids() const;
  // SIGKILLs every member (cgroup.kill where the kernel has it).
  void KillAll() const;
  // Removes the cgroup; FailedPrecondition ("busy") while processes remain in it.
  absl::Status Remove() const;
  CgroupUsage Usage() const;

  // The directories of the cgroup (one for v2, one per controller for v1).
  std::vector<std::filesystem::path> Dirs() const;

 private:
  std::filesystem::path Dir(const std::string& controller) const;

  CgroupLayout layout_;
  std::string name_;
};

}  // namespace drover::supervisor
