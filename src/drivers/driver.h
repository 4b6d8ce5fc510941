// The driver interface (reference §9.1): how a TaskRunner starts, waits for, stops and
// inspects a task. Implementations run on the control loop: every method is called
// from it, and the coroutine methods complete there. Blocking system work inside an
// implementation must be short (posix_spawn, kill) or offloaded.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/async_semaphore.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/signals.h"
#include "model/usage.h"
#include "model/value.h"

namespace drover::drivers {

using common::Duration;
using common::Time;

// Where a task's output goes: `<dir>/<stdout_base>.N`, rotated at `max_file_size`
// bytes, at most `max_files` kept. An empty dir discards the output.
struct TaskLogConfig {
  std::string dir;
  std::string stdout_base;  // "<task>.stdout"
  std::string stderr_base;
  int max_files = 10;
  int64_t max_file_size = int64_t{10} << 20;
};

// A host path made visible in the task (from hooks such as the device hook). Drivers
// with file-system isolation (exec) bind-mount it; raw_exec runs on the host and has
// nothing to mount.
struct MountConfig {
  std::string task_path;
  std::string host_path;
  bool readonly = false;
  friend bool operator==(const MountConfig&, const MountConfig&) = default;
};

// A device node (character or block device) the task may use.
struct DeviceConfig {
  std::string task_path;
  std::string host_path;
  std::string permissions;  // cgroup permissions, some of "rwm"
  friend bool operator==(const DeviceConfig&, const DeviceConfig&) = default;
};

// A port of the group's network (or the task's) that the task may publish: its label,
// the host port the scheduler gave it, the port inside the task's network namespace
// (`to`, or 0 for the same), and the host address it binds.
struct PortMapping {
  std::string label;
  int host_port = 0;
  int container_port = 0;
  std::string host_ip;
  friend bool operator==(const PortMapping&, const PortMapping&) = default;
};

// Everything a driver needs to start one task instance. `id` is new for every start:
// "<alloc id>/<task>/<8 hex>".
struct TaskConfig {
  std::string id;
  std::string alloc_id;
  std::string job_id;
  std::string job_name;
  std::string task_group;
  std::string name;
  std::string namespace_;
  std::string node_id;
  std::string node_name;
  std::string user;
  std::map<std::string, std::string> env;
  model::Value config;  // driver config after ${...} interpolation
  std::string alloc_dir;
  std::string task_dir;
  TaskLogConfig logs;
  int64_t cpu_shares = 0;
  int64_t memory_mb = 0;
  int64_t memory_max_mb = 0;
  // The group network's mode: "" or "host" (the host's network), or "none".
  std::string network_mode;
  // From the prestart hooks, merged in hook order (never replacing one another).
  std::vector<MountConfig> mounts;
  std::vector<DeviceConfig> devices;
  // The part of `env` the device hook set (e.g. NVIDIA_VISIBLE_DEVICES), for drivers
  // that hand device variables to a runtime separately.
  std::map<std::string, std::string> device_env;
  std::vector<PortMapping> ports;
  // A message for the task's events (type "Driver"), such as image download progress.
  // Valid during StartTask only; may be empty.
  std::function<void(const std::string&)> driver_event;
};

// Persisted after a successful start; enough for RecoverTask after an agent restart.
struct TaskHandle {
  int version = 1;
  std::string driver;
  std::string task_id;
  int pid = 0;
  int64_t started_at = 0;  // Unix nanoseconds
  // Process start time in clock ticks since boot (/proc/<pid>/stat field 22): with the
  // pid it identifies the process (pids are reused; the pair is not).
  uint64_t proc_start_ticks = 0;
  // What the driver names the task by besides its id (docker: the container ID).
  std::string driver_ref;
  friend bool operator==(const TaskHandle&, const TaskHandle&) = default;
};

struct ExitResult {
  int exit_code = 0;
  int signal = 0;
  bool oom_killed = false;
  std::string err;
  bool Successful() const { return exit_code == 0 && signal == 0 && err.empty(); }
};

enum class TaskRunState { kUnknown, kRunning, kExited };

struct TaskStatus {
  std::string id;
  std::string name;
  TaskRunState state = TaskRunState::kUnknown;
  Time started_at{};
  Time completed_at{};
  std::optional<ExitResult> exit_result;
  std::map<std::string, std::string> driver_attributes;
};

struct Capabilities {
  bool send_signals = false;
  bool exec = false;
  std::string fs_isolation = "none";  // none | chroot | image
};

struct DriverFingerprint {
  bool detected = false;
  bool healthy = false;
  std::string health_description;
  std::map<std::string, std::string> attributes;
};

// Usage types live in model/ (the API encodes them without seeing drivers).
using model::CpuUsage;
using model::MemoryUsage;
using model::ResourceUsage;
using model::TaskResourceUsage;

class Driver {
 public:
  virtual ~Driver() = default;
  Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  virtual std::string Name() const = 0;
  // The user a task runs as when its `user` is empty ("": the agent's own user). The
  // task's directories are given to that user.
  virtual std::string DefaultUser() const { return ""; }
  virtual Capabilities GetCapabilities() const = 0;
  virtual DriverFingerprint Fingerprint() const = 0;

  // Re-attaches to a task started before an agent restart. OK if already tracked;
  // an error when the task cannot be found (it is then treated as lost).
  virtual absl::Status RecoverTask(const TaskHandle& handle) = 0;
  // A task this driver started under an id beginning with `id_prefix` that nobody has
  // re-attached: the agent stopped between starting it and recording its handle. The
  // caller adopts it (RecoverTask) instead of starting the task a second time. One that
  // exited at or before `exited_after` (Unix ns: the end of the last run the caller
  // recorded) is that run, not a new one, and is not returned. nullopt when there is
  // none, or when the driver keeps nothing across agent restarts.
  virtual std::optional<TaskHandle> FindUnrecorded(const std::string& id_prefix,
                                                   int64_t exited_after = 0) {
    (void)id_prefix;
    (void)exited_after;
    return std::nullopt;
  }
  // Bounds how many of this driver's tasks are being prepared and started at once: a
  // task runner holds one permit from its prestart hooks until StartTask answers. Null:
  // no bound. A driver whose starts queue behind one another (the supervisor spawns
  // one at a time) gives one, so that a burst of starts does not hold every task's
  // prepared environment and request in memory while it waits for its turn. A driver
  // whose start may take long (an image pull) gives none: it would hold up the others.
  virtual common::AsyncSemaphore* start_slots() { return nullptr; }
  // Starts the task. Errors are unrecoverable unless marked with RecoverableError().
  virtual asio::awaitable<absl::StatusOr<TaskHandle>> StartTask(const TaskConfig& config) = 0;
  // Completes when the task has exited (at once if it already has). NotFound for an
  // unknown id. Any number of waiters.
  virtual asio::awaitable<absl::StatusOr<ExitResult>> WaitTask(const std::string& task_id) = 0;
  // Cancels `scope` once the task has exited (at once if it has, or if the id is
  // unknown), after which WaitTask completes without waiting. A caller that waits for
  // the exit or for a stop of its own then waits on one scope instead of racing
  // WaitTask against it, which costs memory for as long as the task runs. A driver
  // destroyed first leaves the scope alone. False: this driver does not, and the
  // caller races WaitTask.
  virtual bool CancelOnExit(const std::string& /*task_id*/,
                            const std::shared_ptr<common::CancellationScope>& /*scope*/) {
    return false;
  }
  // Sends `signal` (empty = driver default, SIGINT), waits up to `timeout`, then kills
  // the whole process group; completes once the task has exited. NotFound = gone.
  virtual asio::awaitable<absl::Status> StopTask(const std::string& task_id, Duration timeout,
                                                 const std::string& signal) = 0;
  // Frees the task's resources and forgets it. A running task is an error unless
  // `force`, in which case it is killed first.
  virtual absl::Status DestroyTask(const std::string& task_id, bool force) = 0;
  virtual absl::StatusOr<TaskStatus> InspectTask(const std::string& task_id) const = 0;
  virtual absl::StatusOr<TaskResourceUsage> TaskStats(const std::string& task_id) = 0;
  virtual absl::Status SignalTask(const std::string& task_id, const std::string& signal) = 0;
};

using DriverPtr = std::unique_ptr<Driver>;

// Start errors are unrecoverable (the task is not restarted) unless marked so.
absl::Status RecoverableError(std::string_view message);
bool IsRecoverable(const absl::Status& status);

using common::ParseSignal;
using common::SignalName;

}  // namespace drover::drivers
