// The docker driver (docs/drivers.md#docker): tasks as containers of a local Docker
// Engine, reached through its API on a unix socket (Engine). Nomad's docker driver's
// behaviour: its task config, its labels, its mounts of the alloc and task dirs, image
// pulls with progress events, logs into the task's rotated files, stats, signals and
// stops, container and image garbage collection, and recovery by container ID after an
// agent restart without restarting the task.
//
// Everything runs on the control loop. The Driver interface's synchronous calls
// (InspectTask, TaskStats, SignalTask, DestroyTask, RecoverTask) answer from what the
// driver keeps and start the daemon calls they need in the background: per task, a
// watcher waits for the container to exit and a follower copies its output.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/async_mutex.h"
#include "common/cancellation.h"
#include "common/event.h"
#include "drivers/docker/engine.h"
#include "drivers/docker/log_stream.h"
#include "drivers/docker/plugin_config.h"
#include "drivers/driver.h"

namespace drover::codec {
struct DockerTaskConfig;
}

namespace drover::drivers::docker {

// The name Drover gives a task's container: "<task>-<alloc id>-<8 hex>" from the task
// id "<alloc id>/<task>/<8 hex>", with characters Docker does not allow in names as '_'.
std::string ContainerName(const std::string& task_id);

class DockerDriver final : public Driver {
 public:
  // `state_dir` holds, per container, what recovery needs besides the task handle: the
  // task's log settings and how far its output was written. Everything passed must
  // outlive the driver; Shutdown must have completed before it is destroyed.
  DockerDriver(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
               PluginConfig config, std::filesystem::path state_dir);
  ~DockerDriver() override;

  // Fingerprints the daemon, takes stock of Drover's containers (what RecoverTask and
  // FindUnrecorded consult), and from then on fingerprints every fingerprint_period.
  asio::awaitable<void> Start();
  // Removes this node's containers that carry Drover's labels but belong to no task
  // this driver tracks: created by an agent that stopped before recording them, or of
  // allocations collected meanwhile. Call once the client has restored its tasks.
  // Returns how many were removed.
  asio::awaitable<int> RemoveDangling(std::string node_id);
  // Ends the background work; containers keep running for the next agent.
  asio::awaitable<void> Shutdown();

  // drivers::Driver
  std::string Name() const override { return "docker"; }
  Capabilities GetCapabilities() const override;
  DriverFingerprint Fingerprint() const override { return fingerprint_; }
  absl::Status RecoverTask(const TaskHandle& handle) override;
  std::optional<TaskHandle> FindUnrecorded(const std::string& id_prefix,
                                           int64_t exited_after) override;
  asio::awaitable<absl::StatusOr<TaskHandle>> StartTask(const TaskConfig& config) override;
  asio::awaitable<absl::StatusOr<ExitResult>> WaitTask(const std::string& task_id) override;
  // Without a signal, Docker's own stop: the image's STOPSIGNAL (SIGTERM unless it says
  // otherwise), then SIGKILL after `timeout`, as Nomad's driver does.
  asio::awaitable<absl::Status> StopTask(const std::string& task_id, Duration timeout,
                                         const std::string& signal) override;
  absl::Status DestroyTask(const std::string& task_id, bool force) override;
  absl::StatusOr<TaskStatus> InspectTask(const std::string& task_id) const override;
  // The latest sample (a request for the next one starts in the background); NotFound
  // until the first has come.
  absl::StatusOr<TaskResourceUsage> TaskStats(const std::string& task_id) override;
  absl::Status SignalTask(const std::string& task_id, const std::string& signal) override;

  const PluginConfig& config() const { return config_; }

 private:
  struct Task;
  // A container found at Start that carries Drover's task label.
  struct Found {
    std::string container;
    bool running = false;
    int64_t started_at = 0;   // Unix ns
    int64_t finished_at = 0;  // Unix ns; 0 while running
  };

  std::shared_ptr<Task> Find(const std::string& task_id) const;
  // Runs `work` detached; Shutdown waits for it.
  void Spawn(asio::awaitable<void> work, std::string what);
  asio::awaitable<void> Counted(asio::awaitable<void> work);
  asio::awaitable<void> FingerprintLoop();
  asio::awaitable<void> TakeStock();
  void SetFingerprint(const docker::Fingerprint& fp);

  // StartTask's steps.
  asio::awaitable<absl::StatusOr<std::string>> EnsureImage(const TaskConfig& config,
                                                           const codec::DockerTaskConfig& docker);
  asio::awaitable<absl::Status> Pull(const TaskConfig& config,
                                     const codec::DockerTaskConfig& docker);
  asio::awaitable<absl::StatusOr<std::string>> CreateAndStart(const TaskConfig& config,
                                                              const codec::DockerTaskConfig& docker,
                                                              std::string image_id);
  // The create and start, with the pinned bind sources (pins: their dir, "" for none).
  asio::awaitable<absl::StatusOr<std::string>> CreateAndStartPinned(
      const TaskConfig& config, const codec::DockerTaskConfig& docker, std::string image_id,
      const std::map<std::string, std::string>& pinned, std::string pins);
  void Track(std::shared_ptr<Task> task);

  // Per task, in the background.
  asio::awaitable<void> Watch(std::shared_ptr<Task> task);
  asio::awaitable<void> Follow(std::shared_ptr<Task> task);
  asio::awaitable<void> SaveState(std::shared_ptr<Task> task);
  asio::awaitable<void> RefreshStats(std::shared_ptr<Task> task);
  asio::awaitable<void> Remove(std::shared_ptr<Task> task);
  asio::awaitable<void> Signal(std::shared_ptr<Task> task, std::string signal);
  void UseImage(const std::string& image_id);
  void ReleaseImage(const std::string& image_id);
  asio::awaitable<void> CollectImage(std::string image_id, uint64_t generation);

  std::filesystem::path StatePath(const std::string& task_id) const;

  asio::any_io_executor executor_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  PluginConfig config_;
  std::filesystem::path state_dir_;
  Engine engine_;
  DriverFingerprint fingerprint_;
  // Cancelled by Shutdown: every loop and follower ends.
  common::CancellationScopePtr root_;
  int running_ = 0;
  common::Notifier idle_;
  std::map<std::string, std::shared_ptr<Task>> tasks_;
  // By task id; known once a Start reached the daemon.
  std::map<std::string, Found> inventory_;
  bool inventory_known_ = false;
  // Tasks whose StartTask is under way (not yet tracked, not dangling).
  std::set<std::string> starting_;
  // Image ID -> the tasks using it (from before their create), and how often it was
  // released (its collector acts only for the latest release).
  struct ImageUse {
    int users = 0;
    uint64_t generation = 0;
  };
  std::map<std::string, ImageUse> image_users_;
  common::AsyncMutex load_lock_;
  // Set by Shutdown: nothing new is started.
  bool stopped_ = false;
  // The node, once RemoveDangling was called: the check runs again whenever the
  // daemon comes back.
  std::string node_id_;
};

}  // namespace drover::drivers::docker
