#include "drivers/docker/stats.h"

namespace drover::drivers::docker {

namespace {

uint64_t Number(const codec::Json& j, std::initializer_list<const char*> path) {
  const codec::Json* at = &j;
  for (const char* key : path) {
    if (!at->is_object())
      return 0;
    auto it = at->find(key);
    if (it == at->end())
      return 0;
    at = &*it;
  }
  return at->is_number_unsigned() ? at->get<uint64_t>()
         : at->is_number_integer() && at->get<int64_t>() > 0
             ? static_cast<uint64_t>(at->get<int64_t>())
             : 0;
}

// Nomad's CalculateCPUPercent: the share of `total`'s change that `sample`'s change is,
// times the cores, in percent.
double Percent(uint64_t sample, uint64_t old_sample, uint64_t total, uint64_t old_total,
               int cores) {
  if (sample <= old_sample || total <= old_total)
    return 0;
  return static_cast<double>(sample - old_sample) / static_cast<double>(total - old_total) * cores *
         100.0;
}

}  // namespace

absl::StatusOr<model::TaskResourceUsage> UsageFromStats(const codec::Json& stats, int cores,
                                                        int64_t now_nanos) {
  if (!stats.is_object() || !stats.contains("memory_stats") || !stats.contains("cpu_stats"))
    return absl::InvalidArgumentError("docker stats without memory_stats and cpu_stats");
  model::TaskResourceUsage u;
  u.timestamp = now_nanos;
  const auto mem = [&](const char* v1, const char* v2) {
    const uint64_t n = Number(stats, {"memory_stats", "stats", v1});
    return n != 0 ? n : Number(stats, {"memory_stats", "stats", v2});
  };
  u.memory.rss = mem("rss", "anon");
  u.memory.cache = mem("cache", "file");
  u.memory.swap = Number(stats, {"memory_stats", "stats", "swap"});
  u.memory.usage = Number(stats, {"memory_stats", "usage"});
  u.memory.max_usage = Number(stats, {"memory_stats", "max_usage"});
  u.memory.measured = {"RSS", "Cache", "Swap", "Usage", "Max Usage"};
  const uint64_t total = Number(stats, {"cpu_stats", "cpu_usage", "total_usage"});
  const uint64_t old_total = Number(stats, {"precpu_stats", "cpu_usage", "total_usage"});
  u.cpu.percent = Percent(total, old_total, Number(stats, {"cpu_stats", "system_cpu_usage"}),
                          Number(stats, {"precpu_stats", "system_cpu_usage"}), cores);
  u.cpu.system_mode = Percent(Number(stats, {"cpu_stats", "cpu_usage", "usage_in_kernelmode"}),
                              Number(stats, {"precpu_stats", "cpu_usage", "usage_in_kernelmode"}),
                              total, old_total, cores);
  u.cpu.user_mode = Percent(Number(stats, {"cpu_stats", "cpu_usage", "usage_in_usermode"}),
                            Number(stats, {"precpu_stats", "cpu_usage", "usage_in_usermode"}),
                            total, old_total, cores);
  u.cpu.throttled_periods = Number(stats, {"cpu_stats", "throttling_data", "throttled_periods"});
  u.cpu.throttled_time = Number(stats, {"cpu_stats", "throttling_data", "throttled_time"});
  u.cpu.measured = {"Throttled Periods", "Throttled Time", "Percent"};
  return u;
}

}  // namespace drover::drivers::docker
