// The part of every process-running driver (raw_exec, exec) that is the same: tasks
// are spawned, signalled, waited for and forgotten through the node's supervisor
// (SupervisorLink), so they survive the agent. A subclass says how a TaskConfig
// becomes a spawn request, and how its tasks' resource usage is measured.
//
// Stop: `kill_signal` to the task's process group, then SIGKILL of the group after
// `kill_timeout`. Destroy: SIGKILL of whatever is left in the group (a task's
// daemonised children die with it), then the exit is acknowledged to the supervisor.
//
// While a task runs the driver also holds the read ends of its log FIFOs open without
// reading them: if the supervisor dies, the task's writes wait in the FIFO for the
// next supervisor instead of failing with SIGPIPE.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/event.h"
#include "drivers/driver.h"
#include "drivers/process_stats.h"
#include "drivers/supervised/supervisor_link.h"

namespace drover::drivers {

class SupervisedDriver : public Driver {
 public:
  ~SupervisedDriver() override;

  DriverFingerprint Fingerprint() const override;
  absl::Status RecoverTask(const TaskHandle& handle) override;
  common::AsyncSemaphore* start_slots() override { return &link_.start_slots(); }
  asio::awaitable<absl::StatusOr<TaskHandle>> StartTask(const TaskConfig& config) override;
  asio::awaitable<absl::StatusOr<ExitResult>> WaitTask(const std::string& task_id) override;
  bool CancelOnExit(const std::string& task_id,
                    const std::shared_ptr<common::CancellationScope>& scope) override;
  asio::awaitable<absl::Status> StopTask(const std::string& task_id, Duration timeout,
                                         const std::string& signal) override;
  absl::Status DestroyTask(const std::string& task_id, bool force) override;
  absl::StatusOr<TaskStatus> InspectTask(const std::string& task_id) const override;
  absl::Status SignalTask(const std::string& task_id, const std::string& signal) override;

  // Whether this driver owns `task_id`: started, recovered, being started or being
  // destroyed by it.
  bool Claims(const std::string& task_id) const;
  // Kills (if still running) and acknowledges a task of the supervisor's that no
  // driver owns, so that nothing runs unmanaged.
  asio::awaitable<void> ReapUnowned(std::string task_id);
  // After a spawn whose answer was lost with the connection: the task the supervisor
  // holds under `task_id`, registered, or nullopt when it never started.
  asio::awaitable<std::optional<TaskHandle>> AdoptAfterReconnect(std::string task_id);
  std::optional<TaskHandle> FindUnrecorded(const std::string& id_prefix,
                                           int64_t exited_after = 0) override;

 protected:
  // `clock` and `link` must outlive the driver.
  SupervisedDriver(asio::any_io_executor executor, common::Clock& clock, SupervisorLink& link);

  // How `config` is run. Errors are start errors (unrecoverable unless marked).
  virtual absl::StatusOr<supervisor::SpawnSpec> BuildSpawnSpec(const TaskConfig& config) = 0;
  // Called once a task has exited and was acknowledged (cleanup such as cgroups).
  virtual void ReleaseTask(const std::string& /*task_id*/) {}

  struct Task {
    Task() = default;
    ~Task();  // closes the held FIFOs
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    TaskHandle handle;
    common::CancellationScopePtr exited;  // cancelled once the task has exited
    std::optional<ExitResult> result;
    Time started_at{};
    Time completed_at{};
    std::vector<int> held_fifos;
    // Previous CPU samples (user, system seconds), for percentages.
    struct CpuSample {
      double user = 0;
      double system = 0;
    };
    CpuSample last_cpu;
    std::map<int, CpuSample> last_pid_cpu;
    int64_t last_sample_ns = 0;
    // The task process's /proc files, opened at its first sample.
    ProcFiles proc_files;
  };

  // Fills `out`'s percentages from cumulative CPU seconds and the previous sample (none
  // on the first call), and records this one.
  static void CpuPercents(Task::CpuSample now, Task::CpuSample* last, int64_t last_ns,
                          int64_t now_ns, CpuUsage& out);
  Task* Find(const std::string& task_id) const;
  common::Clock& clock() { return clock_; }

 private:
  void OnExit(const supervisor::TaskInfo& info);
  Task* Register(const TaskHandle& handle, const supervisor::TaskInfo& info);
  // SIGKILLs what is left of the task's group, waits for the exit, acknowledges it and
  // frees the task (kept in dying_ meanwhile).
  asio::awaitable<void> Release(std::string task_id);
  // After a spawn whose answer was lost: kills and releases the task if the supervisor
  // did start it.
  asio::awaitable<void> ReapOrphan(std::string task_id);

  asio::any_io_executor executor_;
  common::Clock& clock_;
  SupervisorLink& link_;
  int subscription_ = 0;
  std::map<std::string, std::unique_ptr<Task>> tasks_;
  std::map<std::string, std::unique_ptr<Task>> dying_;  // destroyed, exit not yet acked
  std::set<std::string> spawning_;                      // spawn requests in flight
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Once the client has restored its allocations (every task it still owns is
// recovered): kills and acknowledges every task the supervisor holds that none of
// `drivers` owns — tasks of allocations the agent no longer knows (a state DB moved
// aside, an allocation that could not be restored). Returns how many it reaped. All
// drivers sharing `link` must be passed.
asio::awaitable<int> ReapUnownedTasks(SupervisorLink& link, std::vector<SupervisedDriver*> drivers);

// ExitResult for a supervisor's exit record.
ExitResult ToExitResult(const supervisor::ExitStatus& exit);

// The argv of a command-style driver config: `command` (required) then `args` (a list
// of strings). The command is left as written; the supervisor resolves it (relative to
// the working directory, or through the task's PATH).
absl::StatusOr<std::vector<std::string>> CommandArgv(const model::Value& config);

// The supervisor's log spec for a task's log config.
supervisor::LogSpec ToLogSpec(const TaskLogConfig& logs);

}  // namespace drover::drivers
