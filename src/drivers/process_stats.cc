#include "drivers/process_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

namespace drover::drivers {

namespace {

// Reads a small /proc file in one read (they are generated whole).
std::optional<std::string> ReadSmall(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::array<char, 1024> buf{};
  const ssize_t n = read(fd, buf.data(), buf.size());
  close(fd);
  if (n <= 0)
    return std::nullopt;
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace

long ClockTicksPerSecond() {
  static const long ticks = sysconf(_SC_CLK_TCK);
  return ticks;
}

std::optional<ProcSample> ReadProcSample(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  auto content = ReadSmall(path);
  if (!content)
    return std::nullopt;
  // Field 2 (comm) may contain spaces and parentheses: fields resume after the last ')'.
  const size_t close = content->rfind(')');
  if (close == std::string::npos || close + 2 >= content->size())
    return std::nullopt;
  // Field N (N >= 3) is token N-3 after the ')'.
  std::array<uint64_t, 22> f{};
  const char* p = content->c_str() + close + 2;
  for (size_t i = 0; i < f.size() && *p != '\0'; ++i) {
    if (i == 0) {  // state: a letter
      while (*p != '\0' && *p != ' ')
        ++p;
    } else {
      char* end = nullptr;
      f[i] = std::strtoull(p, &end, 10);
      p = end;
    }
    while (*p == ' ')
      ++p;
  }
  static const long page = sysconf(_SC_PAGESIZE);
  ProcSample s;
  s.pid = pid;
  s.pgid = static_cast<int>(f[5 - 3]);
  s.utime_ticks = f[14 - 3];
  s.stime_ticks = f[15 - 3];
  s.start_ticks = f[22 - 3];
  s.rss_bytes = f[24 - 3] * static_cast<uint64_t>(page);
  return s;
}

std::vector<ProcSample> ProcessGroupSamples(int pgid) {
  std::vector<ProcSample> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr)
    return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0')
      continue;
    auto s = ReadProcSample(static_cast<int>(pid));
    if (s && s->pgid == pgid)
      out.push_back(*s);
  }
  closedir(dir);
  return out;
}

}  // namespace drover::drivers
