#include "client/host_stats.h"

#include <sys/statvfs.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

namespace drover::client {

namespace {

std::map<std::string, uint64_t> MemInfo() {
  std::map<std::string, uint64_t> out;
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    if (f >> key >> kb) {
      key.pop_back();  // the ':'
      out[key] = kb * 1024;
    }
  }
  return out;
}

}  // namespace

HostDiskStats DiskStatsOf(const std::string& device, const std::string& path) {
  HostDiskStats d;
  d.device = device;
  d.mountpoint = path;
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0)
    return d;
  d.size = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  d.available = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  d.used = d.size - static_cast<uint64_t>(st.f_bfree) * st.f_frsize;
  // As df (and gopsutil) compute it: of the space a user can get at.
  const uint64_t usable = d.used + d.available;
  d.used_percent =
      usable == 0 ? 0 : 100.0 * static_cast<double>(d.used) / static_cast<double>(usable);
  d.inodes_used_percent = st.f_files == 0 ? 0
                                          : 100.0 * static_cast<double>(st.f_files - st.f_ffree) /
                                                static_cast<double>(st.f_files);
  return d;
}

HostStatsCollector::HostStatsCollector(std::filesystem::path alloc_dir, double cpu_mhz)
    : alloc_dir_(std::move(alloc_dir)), cpu_mhz_(cpu_mhz) {}

HostStats HostStatsCollector::Collect() {
  HostStats s;
  s.timestamp = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  const auto mem = MemInfo();
  auto get = [&mem](const char* k) {
    auto it = mem.find(k);
    return it == mem.end() ? uint64_t{0} : it->second;
  };
  s.memory_total = get("MemTotal");
  s.memory_free = get("MemFree");
  s.memory_available = get("MemAvailable");
  s.memory_used = s.memory_total - s.memory_available;
  {
    std::ifstream in("/proc/uptime");
    double up = 0;
    in >> up;
    s.uptime_seconds = static_cast<uint64_t>(up);
  }
  {
    std::lock_guard lock(mu_);
    std::ifstream in("/proc/stat");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] == ' ')
        continue;  // per-CPU lines only ("cpu0 ..."), not the "cpu " total
      std::istringstream f(line);
      std::string name;
      uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
               steal = 0;
      f >> name >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
      const CpuTimes now{.idle = idle + iowait,
                         .user = user + nice,
                         .system = system,
                         .total = user + nice + system + idle + iowait + irq + softirq + steal};
      const CpuTimes before = previous_[name];
      previous_[name] = now;
      const double span = static_cast<double>(now.total - before.total);
      HostCpuStats c;
      c.cpu = name;
      if (span > 0) {
        c.user = 100.0 * static_cast<double>(now.user - before.user) / span;
        c.system = 100.0 * static_cast<double>(now.system - before.system) / span;
        c.idle = 100.0 * static_cast<double>(now.idle - before.idle) / span;
        c.total = 100.0 - c.idle;
      }
      s.cpu_ticks_consumed += c.total / 100.0 * cpu_mhz_;
      s.cpus.push_back(c);
    }
  }
  // Disks: every mounted block device once.
  std::ifstream mounts("/proc/mounts");
  std::set<std::string> seen;
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream f(line);
    std::string device, mountpoint;
    f >> device >> mountpoint;
    if (device.rfind("/dev/", 0) != 0 || !seen.insert(device).second)
      continue;
    s.disks.push_back(DiskStatsOf(device, mountpoint));
  }
  s.alloc_dir = DiskStatsOf("", alloc_dir_.string());
  return s;
}

}  // namespace drover::client
