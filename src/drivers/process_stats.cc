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

// Reads a /proc file whole (a children list can be longer than one read). These files
// are generated whole on the first read: a read that does not fill the buffer was the
// last, which saves a read per file (this runs for every task every second).
std::optional<std::string> ReadSmall(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::string out;
  std::array<char, 1024> buf{};
  for (;;) {
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n <= 0)
      break;
    out.append(buf.data(), static_cast<size_t>(n));
    if (static_cast<size_t>(n) < buf.size())
      break;
  }
  close(fd);
  if (out.empty())
    return std::nullopt;
  return out;
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
  s.num_threads = f[20 - 3];
  s.start_ticks = f[22 - 3];
  s.rss_bytes = f[24 - 3] * static_cast<uint64_t>(page);
  return s;
}

std::vector<ProcSample> ProcessTreeSamples(int root) {
  std::vector<ProcSample> out;
  std::vector<int> pending = {root};
  while (!pending.empty() && out.size() < 100000) {
    const int pid = pending.back();
    pending.pop_back();
    auto sample = ReadProcSample(pid);
    if (!sample)
      continue;  // gone meanwhile
    out.push_back(*sample);
    const auto add_children = [&pending](const char* path) {
      auto children = ReadSmall(path);
      if (!children)
        return;
      const char* p = children->c_str();
      for (char* end = nullptr;; p = end) {
        const long child = std::strtol(p, &end, 10);
        if (end == p)
          break;
        pending.push_back(static_cast<int>(child));
      }
    };
    char path[320];  // d_name is at most 255 bytes
    // Children are listed per thread. A process of one thread (most tasks) has only
    // its main thread's list: no need to list the threads.
    if (sample->num_threads == 1) {
      snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
      add_children(path);
      continue;
    }
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR* dir = opendir(path);
    if (dir == nullptr)
      continue;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.')
        continue;
      snprintf(path, sizeof path, "/proc/%d/task/%s/children", pid, e->d_name);
      add_children(path);
    }
    closedir(dir);
  }
  return out;
}

}  // namespace drover::drivers
