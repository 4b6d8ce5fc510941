#include "drivers/process_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace drover::drivers {

namespace {

// Reads a /proc file whole from offset 0 (a children list can be longer than one read).
// These files are generated whole on the first read: a read that does not fill the
// buffer was the last, which saves a read per file (this runs for every task every
// second).
std::optional<std::string> ReadWhole(int fd) {
  std::string out;
  std::array<char, 1024> buf{};
  for (off_t offset = 0;;) {
    const ssize_t n = pread(fd, buf.data(), buf.size(), offset);
    if (n <= 0)
      break;
    out.append(buf.data(), static_cast<size_t>(n));
    offset += n;
    if (static_cast<size_t>(n) < buf.size())
      break;
  }
  if (out.empty())
    return std::nullopt;
  return out;
}

std::optional<std::string> ReadSmall(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  auto out = ReadWhole(fd);
  close(fd);
  return out;
}

// Parses /proc/<pid>/stat.
std::optional<ProcSample> ParseStat(int pid, const std::string& content) {
  // Field 2 (comm) may contain spaces and parentheses: fields resume after the last ')'.
  const size_t close = content.rfind(')');
  if (close == std::string::npos || close + 2 >= content.size())
    return std::nullopt;
  // Field N (N >= 3) is token N-3 after the ')'.
  std::array<uint64_t, 22> f{};
  const char* p = content.c_str() + close + 2;
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
  return ParseStat(pid, *content);
}

ProcFiles::ProcFiles(int pid) : pid_(pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  stat_ = open(path, O_RDONLY | O_CLOEXEC);
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
  children_ = open(path, O_RDONLY | O_CLOEXEC);
}

ProcFiles::~ProcFiles() {
  Close();
}

ProcFiles::ProcFiles(ProcFiles&& other) noexcept
    : pid_(other.pid_),
      stat_(std::exchange(other.stat_, -1)),
      children_(std::exchange(other.children_, -1)) {}

ProcFiles& ProcFiles::operator=(ProcFiles&& other) noexcept {
  if (this != &other) {
    Close();
    pid_ = other.pid_;
    stat_ = std::exchange(other.stat_, -1);
    children_ = std::exchange(other.children_, -1);
  }
  return *this;
}

void ProcFiles::Close() {
  if (stat_ >= 0)
    close(stat_);
  if (children_ >= 0)
    close(children_);
  stat_ = children_ = -1;
}

std::vector<ProcSample> ProcessTreeSamples(int root, const ProcFiles* root_files) {
  std::vector<ProcSample> out;
  std::vector<int> pending = {root};
  if (root_files != nullptr && root_files->pid() != root)
    root_files = nullptr;
  while (!pending.empty() && out.size() < 100000) {
    const int pid = pending.back();
    pending.pop_back();
    const ProcFiles* kept = pid == root ? root_files : nullptr;
    std::optional<ProcSample> sample;
    if (kept != nullptr && kept->stat_fd() >= 0) {
      if (auto content = ReadWhole(kept->stat_fd()))
        sample = ParseStat(pid, *content);
    } else {
      sample = ReadProcSample(pid);
    }
    if (!sample)
      continue;  // gone meanwhile
    out.push_back(*sample);
    const auto add_children = [&pending](const char* path, int fd) {
      auto children = fd >= 0 ? ReadWhole(fd) : ReadSmall(path);
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
      add_children(path, kept != nullptr ? kept->children_fd() : -1);
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
      add_children(path, -1);
    }
    closedir(dir);
  }
  return out;
}

}  // namespace drover::drivers
