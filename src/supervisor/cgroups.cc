#include "supervisor/cgroups.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace drover::supervisor {

namespace fs = std::filesystem;

namespace {

constexpr char kV1Parent[] = "drover";
constexpr char kV2Parent[] = "drover.slice";
// The v1 controllers a task cgroup lives in: limits (memory, cpu, pids) and CPU time.
constexpr const char* kV1Controllers[] = {"memory", "cpu", "cpuacct", "pids"};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status WriteFile(const fs::path& p, const std::string& value) {
  std::ofstream out(p);
  out << value;
  out.flush();
  if (!out) {
    return absl::InternalError("failed to write '" + value + "' to " + p.string() + ": " +
                               std::strerror(errno));
  }
  return absl::OkStatus();
}

// "key value" lines (memory.stat, cpu.stat, memory.events, memory.oom_control).
std::map<std::string, uint64_t> ReadKeyed(const fs::path& p) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(ReadAll(p));
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value)
    out[key] = value;
  return out;
}

uint64_t ReadNumber(const fs::path& p) {
  const std::string s = ReadAll(p);
  return s.empty() ? 0 : std::strtoull(s.c_str(), nullptr, 10);
}

uint64_t Get(const std::map<std::string, uint64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

CgroupLayout CgroupLayout::Detect() {
  return Parse(ReadAll("/proc/self/mountinfo"));
}

CgroupLayout CgroupLayout::Parse(const std::string& mountinfo) {
  CgroupLayout layout;
  std::istringstream lines(mountinfo);
  fs::path v2;
  for (std::string line; std::getline(lines, line);) {
    // "<id> <parent> <maj:min> <root> <mount point> <opts> [optional...] - <fstype> <src> <super
    // opts>"
    std::istringstream f(line);
    std::string id, parent, dev, root, mount_point, opts, tok;
    f >> id >> parent >> dev >> root >> mount_point >> opts;
    while (f >> tok && tok != "-") {
    }
    std::string fstype, source, super;
    f >> fstype >> source >> super;
    if (fstype == "cgroup2" && v2.empty()) {
      v2 = mount_point;
    } else if (fstype == "cgroup") {
      std::istringstream so(super);
      for (std::string o; std::getline(so, o, ',');) {
        for (const char* c : kV1Controllers) {
          if (o == c && !layout.v1_roots.contains(c))
            layout.v1_roots[c] = mount_point;
        }
      }
    }
  }
  if (!v2.empty() && ReadAll(v2 / "cgroup.controllers").find("memory") != std::string::npos) {
    layout.mode = CgroupMode::kV2;
    layout.v2_root = v2;
    layout.v1_roots.clear();
  } else if (layout.v1_roots.contains("memory")) {
    layout.mode = CgroupMode::kV1;
  } else {
    layout.v1_roots.clear();
  }
  return layout;
}

std::string CgroupLayout::Describe() const {
  switch (mode) {
    case CgroupMode::kV2:
      return "v2 at " + v2_root.string();
    case CgroupMode::kV1: {
      std::string out = "v1 (";
      for (const auto& [c, p] : v1_roots)
        out += (out.size() > 4 ? ", " : "") + c + " at " + p.string();
      return out + ")";
    }
    case CgroupMode::kNone:
      break;
  }
  return "none";
}

std::string CgroupName(const std::string& task_id) {
  std::string out = task_id;
  for (char& c : out) {
    if (c == '/')
      c = '.';
  }
  return out;
}

int64_t SharesToWeight(int64_t shares) {
  if (shares <= 0)
    return 100;
  const int64_t s = std::clamp<int64_t>(shares, 2, 262144);
  return 1 + ((s - 2) * 9999) / 262142;
}

TaskCgroup::TaskCgroup(CgroupLayout layout, std::string name)
    : layout_(std::move(layout)), name_(std::move(name)) {}

fs::path TaskCgroup::Dir(const std::string& controller) const {
  if (layout_.mode == CgroupMode::kV2)
    return layout_.v2_root / kV2Parent / name_;
  auto it = layout_.v1_roots.find(controller);
  return it == layout_.v1_roots.end() ? fs::path() : it->second / kV1Parent / name_;
}

std::vector<fs::path> TaskCgroup::Dirs() const {
  std::vector<fs::path> out;
  if (layout_.mode == CgroupMode::kV2) {
    out.push_back(Dir(""));
  } else if (layout_.mode == CgroupMode::kV1) {
    std::set<fs::path> seen;  // co-mounted controllers (cpu,cpuacct) share a directory
    for (const char* c : kV1Controllers) {
      const fs::path d = Dir(c);
      if (!d.empty() && seen.insert(d).second)
        out.push_back(d);
    }
  }
  return out;
}

std::vector<fs::path> TaskCgroup::ProcsFiles() const {
  std::vector<fs::path> out;
  for (const fs::path& d : Dirs())
    out.push_back(d / "cgroup.procs");
  return out;
}

bool TaskCgroup::Exists() const {
  const auto dirs = Dirs();
  return !dirs.empty() && fs::exists(dirs.front());
}

absl::Status TaskCgroup::Create(const CgroupLimits& limits) {
  if (layout_.mode == CgroupMode::kNone)
    return absl::FailedPreconditionError("no cgroup hierarchy with a memory controller is mounted");
  std::error_code ec;
  if (layout_.mode == CgroupMode::kV2) {
    // Children of the root and of drover.slice get the controllers only when their
    // parent delegates them.
    const fs::path parent = layout_.v2_root / kV2Parent;
    fs::create_directories(parent, ec);
    for (const fs::path& p : {layout_.v2_root, parent}) {
      const std::string available = ReadAll(p / "cgroup.controllers");
      for (const char* c : {"memory", "cpu", "pids"}) {
        if (available.find(c) != std::string::npos)
          (void)WriteFile(p / "cgroup.subtree_control", std::string("+") + c);
      }
    }
  }
  std::vector<fs::path> created;
  for (const fs::path& d : Dirs()) {
    fs::create_directories(d.parent_path(), ec);
    // A cgroup of that name already exists: it is not ours to join or to remove.
    const bool made = !ec && fs::create_directory(d, ec);
    if (!made) {
      for (const fs::path& c : created)
        rmdir(c.c_str());
      return ec ? absl::InternalError("failed to create cgroup " + d.string() + ": " + ec.message())
                : absl::AlreadyExistsError("cgroup " + d.string() + " already exists");
    }
    created.push_back(d);
  }
  std::vector<std::pair<fs::path, std::string>> writes;
  if (layout_.mode == CgroupMode::kV2) {
    const fs::path d = Dir("");
    if (limits.memory_bytes > 0)
      writes.emplace_back(d / "memory.max", std::to_string(limits.memory_bytes));
    if (limits.memory_soft_bytes > 0)
      writes.emplace_back(d / "memory.low", std::to_string(limits.memory_soft_bytes));
    if (limits.cpu_shares > 0)
      writes.emplace_back(d / "cpu.weight", std::to_string(SharesToWeight(limits.cpu_shares)));
    if (limits.pids_max > 0)
      writes.emplace_back(d / "pids.max", std::to_string(limits.pids_max));
  } else {
    if (limits.memory_bytes > 0)
      writes.emplace_back(Dir("memory") / "memory.limit_in_bytes",
                          std::to_string(limits.memory_bytes));
    if (limits.memory_soft_bytes > 0)
      writes.emplace_back(Dir("memory") / "memory.soft_limit_in_bytes",
                          std::to_string(limits.memory_soft_bytes));
    if (limits.cpu_shares > 0 && !Dir("cpu").empty())
      writes.emplace_back(Dir("cpu") / "cpu.shares",
                          std::to_string(std::max<int64_t>(2, limits.cpu_shares)));
    if (limits.pids_max > 0) {
      if (Dir("pids").empty()) {
        (void)Remove();
        return absl::FailedPreconditionError("pids_limit needs the pids cgroup controller");
      }
      writes.emplace_back(Dir("pids") / "pids.max", std::to_string(limits.pids_max));
    }
  }
  for (const auto& [file, value] : writes) {
    if (absl::Status s = WriteFile(file, value); !s.ok()) {
      (void)Remove();
      return s;
    }
  }
  return absl::OkStatus();
}

bool TaskCgroup::OomKilled() const {
  if (layout_.mode == CgroupMode::kV2)
    return Get(ReadKeyed(Dir("") / "memory.events"), "oom_kill") > 0;
  if (layout_.mode == CgroupMode::kV1)
    return Get(ReadKeyed(Dir("memory") / "memory.oom_control"), "oom_kill") > 0;
  return false;
}

std::vector<int> TaskCgroup::Pids() const {
  std::vector<int> out;
  const auto files = ProcsFiles();
  if (files.empty())
    return out;
  std::istringstream in(ReadAll(files.front()));
  for (int pid = 0; in >> pid;)
    out.push_back(pid);
  return out;
}

void TaskCgroup::KillAll() const {
  if (layout_.mode == CgroupMode::kV2 && fs::exists(Dir("") / "cgroup.kill")) {
    (void)WriteFile(Dir("") / "cgroup.kill", "1");
    return;
  }
  // Without cgroup.kill a process could fork between the read and the kill: repeat
  // until a pass finds nobody (bounded; the next call tries again).
  for (int pass = 0; pass < 10; ++pass) {
    const std::vector<int> pids = Pids();
    if (pids.empty())
      return;
    for (int pid : pids)
      kill(pid, SIGKILL);
  }
}

absl::Status TaskCgroup::Remove() const {
  absl::Status status;
  for (const fs::path& d : Dirs()) {
    if (rmdir(d.c_str()) != 0 && errno != ENOENT && status.ok()) {
      status = errno == EBUSY ? absl::FailedPreconditionError("cgroup " + d.string() + " is busy")
                              : absl::InternalError("failed to remove cgroup " + d.string() + ": " +
                                                    std::strerror(errno));
    }
  }
  return status;
}

CgroupUsage TaskCgroup::Usage() const {
  CgroupUsage u;
  if (layout_.mode == CgroupMode::kV2) {
    const fs::path d = Dir("");
    u.memory_usage = ReadNumber(d / "memory.current");
    u.memory_max_usage = ReadNumber(d / "memory.peak");
    u.swap = ReadNumber(d / "memory.swap.current");
    const auto mem = ReadKeyed(d / "memory.stat");
    u.rss = Get(mem, "anon");
    u.cache = Get(mem, "file");
    const auto cpu = ReadKeyed(d / "cpu.stat");
    u.cpu_user_seconds = static_cast<double>(Get(cpu, "user_usec")) / 1e6;
    u.cpu_system_seconds = static_cast<double>(Get(cpu, "system_usec")) / 1e6;
    u.cpu_total_seconds = static_cast<double>(Get(cpu, "usage_usec")) / 1e6;
    u.throttled_periods = Get(cpu, "nr_throttled");
    u.throttled_time_ns = Get(cpu, "throttled_usec") * 1000;
  } else if (layout_.mode == CgroupMode::kV1) {
    const fs::path m = Dir("memory");
    u.memory_usage = ReadNumber(m / "memory.usage_in_bytes");
    u.memory_max_usage = ReadNumber(m / "memory.max_usage_in_bytes");
    const auto mem = ReadKeyed(m / "memory.stat");
    u.rss = Get(mem, "rss");
    u.cache = Get(mem, "cache");
    u.swap = Get(mem, "swap");
    static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    if (const fs::path a = Dir("cpuacct"); !a.empty()) {
      const auto stat = ReadKeyed(a / "cpuacct.stat");
      u.cpu_user_seconds = static_cast<double>(Get(stat, "user")) / ticks;
      u.cpu_system_seconds = static_cast<double>(Get(stat, "system")) / ticks;
      u.cpu_total_seconds = static_cast<double>(ReadNumber(a / "cpuacct.usage")) / 1e9;
    }
    if (const fs::path c = Dir("cpu"); !c.empty()) {
      const auto stat = ReadKeyed(c / "cpu.stat");
      u.throttled_periods = Get(stat, "nr_throttled");
      u.throttled_time_ns = Get(stat, "throttled_time");
    }
  }
  return u;
}

}  // namespace drover::supervisor
