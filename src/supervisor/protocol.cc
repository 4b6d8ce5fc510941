#include "supervisor/protocol.h"

#include <stdexcept>

namespace drover::supervisor {

std::string EncodeFrame(const Json& message) {
  const std::string body = message.dump();
  const auto n = static_cast<uint32_t>(body.size());
  std::string out;
  out.reserve(4 + body.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out += body;
  return out;
}

absl::StatusOr<std::optional<Json>> FrameDecoder::Next() {
  if (buffer_.size() < 4)
    return std::nullopt;
  const auto b = [this](int i) { return static_cast<uint32_t>(static_cast<uint8_t>(buffer_[i])); };
  const uint32_t n = (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
  if (n > kMaxFrameBytes) {
    return absl::InvalidArgumentError("frame of " + std::to_string(n) + " bytes exceeds the " +
                                      std::to_string(kMaxFrameBytes) + "-byte limit");
  }
  if (buffer_.size() < 4 + static_cast<size_t>(n))
    return std::nullopt;
  // No frame of ours nests deeply; a deep one is refused before it is built (what is
  // built is walked recursively later, when it is encoded).
  const Json::parser_callback_t depth_check = [](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxFrameDepth)
      throw std::length_error("nested too deeply");
    return true;
  };
  Json j;
  try {
    j = Json::parse(buffer_.begin() + 4, buffer_.begin() + 4 + n, depth_check,
                    /*allow_exceptions=*/false);
  } catch (const std::exception&) {
    j = Json(Json::value_t::discarded);
  }
  buffer_.erase(0, 4 + static_cast<size_t>(n));
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("frame is not a JSON object of at most " +
                                      std::to_string(kMaxFrameDepth) + " levels");
  }
  return std::optional<Json>(std::move(j));
}

Json ToJson(const LogSpec& s) {
  return {{"dir", s.dir},
          {"stdout_base", s.stdout_base},
          {"stderr_base", s.stderr_base},
          {"max_files", s.max_files},
          {"max_file_size", s.max_file_size}};
}

Json ToJson(const SpawnSpec& s) {
  Json j = {{"task_id", s.task_id}, {"argv", s.argv},   {"env", s.env},          {"cwd", s.cwd},
            {"user", s.user},       {"umask", s.umask}, {"logs", ToJson(s.logs)}};
  if (!s.group.empty())
    j["group"] = s.group;
  if (!s.rlimits.empty()) {
    Json limits = Json::array();
    for (const Rlimit& r : s.rlimits)
      limits.push_back({{"resource", r.resource}, {"soft", r.soft}, {"hard", r.hard}});
    j["rlimits"] = limits;
  }
  if (s.isolation.enabled) {
    Json binds = Json::array();
    for (const BindMount& b : s.isolation.binds)
      binds.push_back({{"source", b.source}, {"target", b.target}, {"readonly", b.readonly}});
    Json devices = Json::array();
    for (const DeviceNode& d : s.isolation.devices) {
      devices.push_back(
          {{"host_path", d.host_path}, {"task_path", d.task_path}, {"permissions", d.permissions}});
    }
    j["isolation"] = {{"root", s.isolation.root},
                      {"binds", binds},
                      {"devices", devices},
                      {"network_none", s.isolation.network_none}};
  }
  if (!s.cgroup.name.empty()) {
    const CgroupLimits& l = s.cgroup.limits;
    j["cgroup"] = {{"name", s.cgroup.name},
                   {"memory_bytes", l.memory_bytes},
                   {"memory_soft_bytes", l.memory_soft_bytes},
                   {"cpu_shares", l.cpu_shares},
                   {"pids_max", l.pids_max}};
  }
  return j;
}

Json ToJson(const ExitStatus& s) {
  return {{"exit_code", s.exit_code},
          {"signal", s.signal},
          {"oom_killed", s.oom_killed},
          {"unknown", s.unknown},
          {"time_ns", s.time_ns}};
}

Json ToJson(const TaskInfo& s) {
  Json j = {{"task_id", s.task_id},
            {"pid", s.pid},
            {"start_ticks", s.start_ticks},
            {"running", s.running}};
  if (s.exit)
    j["exit"] = ToJson(*s.exit);
  if (!s.logs.dir.empty())
    j["logs"] = ToJson(s.logs);
  if (!s.stdout_fifo.empty())
    j["fifos"] = {{"stdout", s.stdout_fifo}, {"stderr", s.stderr_fifo}};
  if (!s.cgroup.empty())
    j["cgroup"] = s.cgroup;
  return j;
}

namespace {

// Typed field access that reports which field is wrong instead of throwing.
template <typename T>
absl::Status Read(const Json& j, const char* key, T& out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? absl::InvalidArgumentError(std::string("missing field \"") + key + "\"")
                    : absl::OkStatus();
  }
  try {
    out = it->get<T>();
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(std::string("bad field \"") + key + "\": " + e.what());
  }
  return absl::OkStatus();
}

#define DROVER_READ(j, key, out, required)                                             \
  do {                                                                                 \
    if (absl::Status read_status_ = Read(j, key, out, required); !read_status_.ok()) { \
      return read_status_;                                                             \
    }                                                                                  \
  } while (0)

absl::Status ReadLogSpec(const Json& j, LogSpec& s) {
  auto it = j.find("logs");
  if (it == j.end() || !it->is_object())
    return absl::OkStatus();
  DROVER_READ(*it, "dir", s.dir, false);
  DROVER_READ(*it, "stdout_base", s.stdout_base, false);
  DROVER_READ(*it, "stderr_base", s.stderr_base, false);
  DROVER_READ(*it, "max_files", s.max_files, false);
  DROVER_READ(*it, "max_file_size", s.max_file_size, false);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SpawnSpec> SpawnSpecFromJson(const Json& j) {
  SpawnSpec s;
  DROVER_READ(j, "task_id", s.task_id, true);
  DROVER_READ(j, "argv", s.argv, true);
  DROVER_READ(j, "env", s.env, false);
  DROVER_READ(j, "cwd", s.cwd, false);
  DROVER_READ(j, "user", s.user, false);
  DROVER_READ(j, "umask", s.umask, false);
  DROVER_READ(j, "group", s.group, false);
  if (auto it = j.find("rlimits"); it != j.end() && it->is_array()) {
    for (const Json& e : *it) {
      Rlimit r;
      DROVER_READ(e, "resource", r.resource, true);
      DROVER_READ(e, "soft", r.soft, true);
      DROVER_READ(e, "hard", r.hard, true);
      if (r.soft > r.hard)
        return absl::InvalidArgumentError("rlimit " + r.resource + ": soft limit above hard limit");
      s.rlimits.push_back(r);
    }
  }
  if (absl::Status st = ReadLogSpec(j, s.logs); !st.ok())
    return st;
  if (auto it = j.find("isolation"); it != j.end() && it->is_object()) {
    s.isolation.enabled = true;
    DROVER_READ(*it, "root", s.isolation.root, true);
    DROVER_READ(*it, "network_none", s.isolation.network_none, false);
    if (auto b = it->find("binds"); b != it->end() && b->is_array()) {
      for (const Json& e : *b) {
        BindMount m;
        DROVER_READ(e, "source", m.source, true);
        DROVER_READ(e, "target", m.target, true);
        DROVER_READ(e, "readonly", m.readonly, false);
        if (m.target.empty() || m.target[0] != '/' || m.target.find("..") != std::string::npos)
          return absl::InvalidArgumentError("bind target \"" + m.target +
                                            "\" must be an absolute path without \"..\"");
        // The task's /dev is a fresh tmpfs mounted over anything bound there.
        if (m.target == "/dev" || m.target.rfind("/dev/", 0) == 0)
          return absl::InvalidArgumentError("bind target \"" + m.target +
                                            "\" is under /dev; give device nodes as devices");
        s.isolation.binds.push_back(m);
      }
    }
    if (auto d = it->find("devices"); d != it->end() && d->is_array()) {
      for (const Json& e : *d) {
        DeviceNode n;
        DROVER_READ(e, "host_path", n.host_path, true);
        DROVER_READ(e, "task_path", n.task_path, true);
        DROVER_READ(e, "permissions", n.permissions, false);
        if (n.task_path.rfind("/dev/", 0) != 0 || n.task_path.find("..") != std::string::npos)
          return absl::InvalidArgumentError("device path \"" + n.task_path +
                                            "\" must be under /dev and without \"..\"");
        s.isolation.devices.push_back(n);
      }
    }
    if (s.isolation.root.empty() || s.isolation.root[0] != '/')
      return absl::InvalidArgumentError("isolation root must be an absolute path");
  }
  if (auto it = j.find("cgroup"); it != j.end() && it->is_object()) {
    DROVER_READ(*it, "name", s.cgroup.name, true);
    DROVER_READ(*it, "memory_bytes", s.cgroup.limits.memory_bytes, false);
    DROVER_READ(*it, "memory_soft_bytes", s.cgroup.limits.memory_soft_bytes, false);
    DROVER_READ(*it, "cpu_shares", s.cgroup.limits.cpu_shares, false);
    DROVER_READ(*it, "pids_max", s.cgroup.limits.pids_max, false);
    if (s.cgroup.name.empty() || s.cgroup.name.find('/') != std::string::npos ||
        s.cgroup.name == "." || s.cgroup.name == "..")
      return absl::InvalidArgumentError("bad cgroup name \"" + s.cgroup.name + "\"");
  }
  if (s.task_id.empty())
    return absl::InvalidArgumentError("task_id must not be empty");
  if (s.argv.empty() || s.argv[0].empty())
    return absl::InvalidArgumentError("argv must name a command");
  if (!s.logs.dir.empty() && (s.logs.stdout_base.empty() || s.logs.stderr_base.empty()))
    return absl::InvalidArgumentError("logs need stdout_base and stderr_base");
  return s;
}

absl::StatusOr<TaskInfo> TaskInfoFromJson(const Json& j) {
  TaskInfo t;
  DROVER_READ(j, "task_id", t.task_id, true);
  DROVER_READ(j, "pid", t.pid, true);
  DROVER_READ(j, "start_ticks", t.start_ticks, false);
  DROVER_READ(j, "running", t.running, false);
  if (auto it = j.find("exit"); it != j.end() && it->is_object()) {
    ExitStatus e;
    DROVER_READ(*it, "exit_code", e.exit_code, false);
    DROVER_READ(*it, "signal", e.signal, false);
    DROVER_READ(*it, "oom_killed", e.oom_killed, false);
    DROVER_READ(*it, "unknown", e.unknown, false);
    DROVER_READ(*it, "time_ns", e.time_ns, false);
    t.exit = e;
  }
  if (absl::Status st = ReadLogSpec(j, t.logs); !st.ok())
    return st;
  DROVER_READ(j, "cgroup", t.cgroup, false);
  if (auto it = j.find("fifos"); it != j.end() && it->is_object()) {
    DROVER_READ(*it, "stdout", t.stdout_fifo, false);
    DROVER_READ(*it, "stderr", t.stderr_fifo, false);
  }
  return t;
}

#undef DROVER_READ

}  // namespace drover::supervisor
