#include "client/allocrunner/alloc_usage.h"

#include <algorithm>

namespace drover::allocrunner {

AllocUsage SumUsage(std::map<std::string, drivers::TaskResourceUsage> tasks) {
  AllocUsage out;
  for (const auto& [name, u] : tasks) {
    out.memory.rss += u.memory.rss;
    out.memory.cache += u.memory.cache;
    out.memory.swap += u.memory.swap;
    out.memory.usage += u.memory.usage;
    out.memory.max_usage += u.memory.max_usage;
    out.cpu.system_mode += u.cpu.system_mode;
    out.cpu.user_mode += u.cpu.user_mode;
    out.cpu.percent += u.cpu.percent;
    out.cpu.throttled_periods += u.cpu.throttled_periods;
    out.cpu.throttled_time += u.cpu.throttled_time;
    if (out.memory.measured.empty())
      out.memory.measured = u.memory.measured;
    if (out.cpu.measured.empty())
      out.cpu.measured = u.cpu.measured;
    out.timestamp = std::max(out.timestamp, u.timestamp);
  }
  out.tasks = std::move(tasks);
  return out;
}

void FillTotalTicks(AllocUsage& usage, double core_mhz) {
  const auto fill = [core_mhz](drivers::CpuUsage& cpu) {
    cpu.total_ticks = cpu.percent / 100.0 * core_mhz;
  };
  fill(usage.cpu);
  for (auto& [name, task] : usage.tasks) {
    fill(task.cpu);
    for (auto& [pid, p] : task.pids)
      fill(p.cpu);
  }
}

}  // namespace drover::allocrunner
