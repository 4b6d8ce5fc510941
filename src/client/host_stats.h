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

#include "model/usage.h"

namespace drover::client {

using model::HostCpuStats;
using model::HostDiskStats;
using model::HostStats;

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
