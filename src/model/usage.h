// Resource usage as Nomad reports it: a task's samples (TaskResourceUsage), an
// allocation's (AllocUsage, the sum of its tasks'), and the node's own (HostStats).
// Drivers and the client produce them; the HTTP API only encodes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace drover::model {

struct MemoryUsage {
  uint64_t rss = 0;
  uint64_t cache = 0;
  uint64_t swap = 0;
  uint64_t usage = 0;
  uint64_t max_usage = 0;
  std::vector<std::string> measured;
};

// Percentages are of one core over the time since the previous sample (Nomad's).
struct CpuUsage {
  double system_mode = 0;  // percent in the kernel
  double user_mode = 0;    // percent in user space
  double total_ticks = 0;  // MHz in use; filled in by the client (it knows the clock)
  uint64_t throttled_periods = 0;
  uint64_t throttled_time = 0;
  double percent = 0;
  std::vector<std::string> measured;
};

struct ResourceUsage {
  MemoryUsage memory;
  CpuUsage cpu;
};

struct TaskResourceUsage {
  MemoryUsage memory;
  CpuUsage cpu;
  int64_t timestamp = 0;  // Unix nanoseconds
  // Per process (pid as a string), where the driver can tell (raw_exec).
  std::map<std::string, ResourceUsage> pids;
};

struct AllocUsage {
  std::map<std::string, TaskResourceUsage> tasks;  // those sampled so far
  MemoryUsage memory;                              // the tasks' sum
  CpuUsage cpu;                                    // the tasks' sum
  int64_t timestamp = 0;                           // the latest task sample
};

struct HostCpuStats {
  std::string cpu;  // "cpu0"
  double user = 0;  // percent of the interval
  double system = 0;
  double idle = 0;
  double total = 0;  // user + system + everything else that is not idle
};

struct HostDiskStats {
  std::string device;
  std::string mountpoint;
  uint64_t size = 0;
  uint64_t used = 0;
  uint64_t available = 0;
  double used_percent = 0;
  double inodes_used_percent = 0;
};

struct HostStats {
  uint64_t memory_total = 0;
  uint64_t memory_available = 0;
  uint64_t memory_used = 0;
  uint64_t memory_free = 0;
  std::vector<HostCpuStats> cpus;
  std::vector<HostDiskStats> disks;
  HostDiskStats alloc_dir;
  uint64_t uptime_seconds = 0;
  int64_t timestamp = 0;          // Unix nanoseconds
  double cpu_ticks_consumed = 0;  // MHz in use across all cores
};

}  // namespace drover::model
