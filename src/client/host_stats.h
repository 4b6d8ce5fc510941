// The node's own resource usage for GET /v1/client/stats (Nomad's HostStats): memory,
// per-CPU utilisation since the previous collection, disks, the alloc dir's disk, and
// uptime. Blocking reads of /proc and statvfs: call on the blocking pool.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace drover::client {

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

// Thread-safe. CPU percentages are over the time since the previous Collect (since
// boot for the first).
class HostStatsCollector {
 public:
  // `alloc_dir`: where allocations live (its file system is AllocDirStats); `cpu_mhz`:
  // per-core frequency, for CPUTicksConsumed.
  HostStatsCollector(std::filesystem::path alloc_dir, double cpu_mhz);
  HostStats Collect();

 private:
  struct CpuTimes {
    uint64_t idle = 0;  // idle + iowait
    uint64_t user = 0;  // user + nice
    uint64_t system = 0;
    uint64_t total = 0;
  };
  const std::filesystem::path alloc_dir_;
  const double cpu_mhz_;
  std::mutex mu_;
  std::map<std::string, CpuTimes> previous_;
};

// statvfs of the file system holding `path`.
HostDiskStats DiskStatsOf(const std::string& device, const std::string& path);

}  // namespace drover::client
