// The agent ⇄ drover-supervisor protocol (DESIGN.md §6; documented for users in
// docs/supervisor.md): a unix stream socket carrying frames of a 4-byte big-endian
// length followed by that many bytes of JSON (one object per frame, at most
// kMaxFrameBytes).
//
//   request   {"id": N, "op": "spawn" | "signal" | "list" | "ack_exit", ...}
//   response  {"id": N, "ok": true, ...}   or   {"id": N, "ok": false, "error": "..."}
//   event     {"event": "exited", "task": TaskInfo}   (pushed to every connection)
//
// A malformed, oversized or too deeply nested frame closes that connection only; a
// request of the wrong shape gets an error answer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "supervisor/cgroups.h"

namespace drover::supervisor {

using Json = nlohmann::json;

inline constexpr uint32_t kMaxFrameBytes = 1u << 20;
inline constexpr int kMaxFrameDepth = 32;

// One frame: length prefix and the compact JSON text.
std::string EncodeFrame(const Json& message);

// Splits a byte stream into messages.
class FrameDecoder {
 public:
  void Append(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete message, nullopt when more bytes are needed, or an error for an
  // oversized frame or one that is not a JSON object (the stream is then unusable).
  absl::StatusOr<std::optional<Json>> Next();

 private:
  std::string buffer_;
};

// Where a task's stdout and stderr go: `<dir>/<stdout_base>.N`, rotated. An empty dir
// discards the output. The task writes into FIFOs in the supervisor's own state dir
// (TaskInfo names them), so a supervisor started after a crash can reopen them.
struct LogSpec {
  std::string dir;
  std::string stdout_base;
  std::string stderr_base;
  int max_files = 10;
  int64_t max_file_size = int64_t{10} << 20;
};

// A host path made visible inside an isolated task's root.
struct BindMount {
  std::string source;  // host path (a directory or a file)
  std::string target;  // absolute path inside the task's root
  bool readonly = true;
  friend bool operator==(const BindMount&, const BindMount&) = default;
};

// A host device node recreated in the isolated task's /dev (from the device hook).
struct DeviceNode {
  std::string host_path;    // a character or block device on the host
  std::string task_path;    // "/dev/..." inside the task
  std::string permissions;  // cgroup permissions ("rwm"); informational for now
  friend bool operator==(const DeviceNode&, const DeviceNode&) = default;
};

// Runs the task in new mount, pid, ipc and uts namespaces (it is pid 1 of its own pid
// namespace, so everything it starts dies with it) chrooted into `root`, with the
// binds mounted, a fresh /proc and a minimal /dev. The mounts exist only in the
// task's mount namespace: nothing is left on the host when it ends.
//
// An isolated task is also hardened (hardening.h): no_new_privs, a reduced capability
// bounding set and a seccomp filter. With `network_none` it gets its own network
// namespace with only a loopback interface (network mode "none").
struct IsolationSpec {
  bool enabled = false;
  std::string root;  // host path that becomes the task's "/"
  std::vector<BindMount> binds;
  std::vector<DeviceNode> devices;
  bool network_none = false;
};

struct CgroupSpec {
  std::string name;  // empty: no cgroup (see cgroups.h for where it lives)
  CgroupLimits limits;
};

// A resource limit for the task (setrlimit): `resource` is one of as, core, cpu, data,
// fsize, memlock, nofile, nproc, stack.
struct Rlimit {
  std::string resource;
  uint64_t soft = 0;
  uint64_t hard = 0;
  friend bool operator==(const Rlimit&, const Rlimit&) = default;
};

struct SpawnSpec {
  std::string task_id;
  std::vector<std::string> argv;  // argv[0] is a path or a name looked up in env PATH
  std::map<std::string, std::string> env;
  std::string cwd;
  std::string user;   // empty: the supervisor's own user
  std::string group;  // empty: the user's primary group
  int umask = 022;
  std::vector<Rlimit> rlimits;
  LogSpec logs;
  IsolationSpec isolation;
  CgroupSpec cgroup;
};

struct ExitStatus {
  int exit_code = 0;
  int signal = 0;
  bool oom_killed = false;
  // The supervisor did not see the exit (it adopted the task after a restart and the
  // task was not its child): the code is not known.
  bool unknown = false;
  int64_t time_ns = 0;
};

struct TaskInfo {
  std::string task_id;
  int pid = 0;
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22: with pid, the identity
  bool running = false;
  std::optional<ExitStatus> exit;
  LogSpec logs;  // as spawned: lets a later supervisor resume pumping the task's output
  // The FIFOs its stdout and stderr are written into (empty without logs).
  std::string stdout_fifo;
  std::string stderr_fifo;
  std::string cgroup;  // its cgroup's name, if it has one (OOM check, cleanup)
};

Json ToJson(const LogSpec& s);
Json ToJson(const SpawnSpec& s);
Json ToJson(const ExitStatus& s);
Json ToJson(const TaskInfo& s);
absl::StatusOr<SpawnSpec> SpawnSpecFromJson(const Json& j);
absl::StatusOr<TaskInfo> TaskInfoFromJson(const Json& j);

}  // namespace drover::supervisor
