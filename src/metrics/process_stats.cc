#include "metrics/process_stats.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace drover::metrics {

absl::StatusOr<ProcessStats> ReadProcessStats(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream in(dir + "/stat");
  std::string line;
  if (!in || !std::getline(in, line))
    return absl::NotFoundError("process " + std::to_string(pid) + " is gone");
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos)
    return absl::InternalError("unexpected " + dir + "/stat: " + line.substr(0, 80));
  std::istringstream fields(line.substr(close + 2));
  std::string f[24];
  for (auto& x : f)
    fields >> x;
  // Fields 3.. of proc(5): f[0] is state (3); utime is 14, stime 15, num_threads 20,
  // rss 24 (pages).
  ProcessStats out;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  out.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / tick;
  out.threads = std::stoull(f[17]);
  out.rss_bytes = std::stoull(f[21]) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++out.open_fds;
  }
  return out;
}

}  // namespace drover::metrics
