#include "drivers/docker/docker_driver.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

#include "codec/docker_config.h"
#include "codec/json.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"
#include "drivers/docker/container_spec.h"
#include "drivers/docker/docker_task.h"

namespace drover::drivers::docker {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// The most of Drover's containers taken stock of at start; with more, the stock is
// treated as unknown (RecoverTask then trusts the handle).
constexpr size_t kMaxContainers = 16384;

int64_t UnixNanos(const std::string& rfc3339) {
  if (rfc3339.empty() || rfc3339.starts_with("0001-01-01"))
    return 0;
  absl::StatusOr<model::Time> t = codec::ParseTime(rfc3339);
  return t.ok() ? common::ToUnixNanos(*t) : 0;
}

bool NameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

// Where a task instance's shared bind sources are pinned: in its private/ dir, which
// only the agent can write.
std::string PinDir(const TaskConfig& config) {
  return config.task_dir + "/private/binds/" + ContainerName(config.id);
}

}  // namespace

std::string ContainerName(const std::string& task_id) {
  // "<alloc id>/<task>/<8 hex>": the task name may itself hold '/'.
  const size_t first = task_id.find('/');
  const size_t last = task_id.rfind('/');
  std::string alloc = task_id.substr(0, first);
  std::string task = first == last ? "" : task_id.substr(first + 1, last - first - 1);
  std::string suffix = last == std::string::npos ? "" : task_id.substr(last + 1);
  task = task.substr(0, 128);
  std::string name = task + "-" + alloc + "-" + suffix;
  for (char& c : name) {
    if (!NameChar(c))
      c = '_';
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(name.front())))
    name = "task" + name;
  return name;
}

DockerDriver::DockerDriver(asio::any_io_executor executor, asio::thread_pool& pool,
                           common::Clock& clock, PluginConfig config,
                           std::filesystem::path state_dir)
    : executor_(executor),
      pool_(pool),
      clock_(clock),
      config_(std::move(config)),
      state_dir_(std::move(state_dir)),
      engine_(EndpointAddress(config_.endpoint).value_or("")),
      root_(common::CancellationScope::Create(executor)),
      idle_(executor),
      load_lock_(executor) {
  fingerprint_.health_description = "Docker daemon not fingerprinted yet";
}

DockerDriver::~DockerDriver() = default;

Capabilities DockerDriver::GetCapabilities() const {
  return Capabilities{.send_signals = true, .exec = false, .fs_isolation = "image"};
}

asio::awaitable<void> DockerDriver::Counted(asio::awaitable<void> work) {
  try {
    co_await std::move(work);
  } catch (const std::exception& e) {
    // Counted down all the same: Shutdown waits for the count.
    DROVER_LOG_ERROR("docker: background work failed: {}", e.what());
  }
  if (--running_ == 0)
    idle_.Notify();
}

void DockerDriver::Spawn(asio::awaitable<void> work, std::string what) {
  if (stopped_) {
    DROVER_LOG_DEBUG("docker: not started after shutdown: {}", what);
    return;
  }
  ++running_;
  common::SpawnDetached(executor_, Counted(std::move(work)), std::move(what));
}

void DockerDriver::SetFingerprint(const docker::Fingerprint& fp) {
  DriverFingerprint out;
  // A daemon that answered once and stopped is an unhealthy driver; one never seen is
  // not detected (no docker on this node).
  out.detected = fp.healthy || fingerprint_.detected;
  out.healthy = fp.healthy;
  out.health_description = fp.health_description;
  out.attributes = fp.healthy ? fp.attributes : fingerprint_.attributes;
  if (fp.healthy) {
    // Nomad's values: constraints on them compare with "true".
    if (config_.allow_privileged)
      out.attributes["driver.docker.privileged.enabled"] = "true";
    if (config_.volumes_enabled)
      out.attributes["driver.docker.volumes.enabled"] = "true";
  }
  if (out.healthy != fingerprint_.healthy) {
    DROVER_LOG_INFO("docker: driver is {}: {}", out.healthy ? "healthy" : "unhealthy",
                    out.health_description);
  }
  fingerprint_ = std::move(out);
}

asio::awaitable<void> DockerDriver::Start() {
  std::error_code ec;
  std::filesystem::create_directories(state_dir_, ec);
  if (ec)
    DROVER_LOG_WARN("docker: cannot create {}: {}", state_dir_.string(), ec.message());
  docker::Fingerprint fp = co_await FingerprintEngine(engine_);
  SetFingerprint(fp);
  if (fp.healthy)
    co_await TakeStock();
  Spawn(FingerprintLoop(), "docker fingerprint");
}

asio::awaitable<void> DockerDriver::TakeStock() {
  std::string label = kLabelTaskId;
  auto listed = co_await engine_.ListContainers(label, kMaxContainers);
  if (!listed.ok()) {
    DROVER_LOG_WARN("docker: cannot list containers: {}", listed.status().ToString());
    co_return;
  }
  std::map<std::string, Found> found;
  for (const Engine::ContainerSummary& c : *listed) {
    auto task_id = c.labels.find(kLabelTaskId);
    if (task_id == c.labels.end())
      continue;
    Found f{.container = c.id,
            .running = c.state == "running",
            .started_at = c.created * int64_t{1'000'000'000}};
    if (!f.running) {
      // When it ended decides whether it is an unrecorded run (FindUnrecorded).
      auto state = co_await engine_.InspectContainer(c.id);
      if (!state.ok())
        continue;  // removed meanwhile
      f.running = state->running;
      f.finished_at = UnixNanos(state->finished_at);
    }
    found[task_id->second] = std::move(f);
  }
  inventory_ = std::move(found);
  inventory_known_ = listed->size() < kMaxContainers;
}

asio::awaitable<void> DockerDriver::FingerprintLoop() {
  const common::CancellationScopePtr root = root_;
  while (!root->cancelled()) {
    auto r = co_await (clock_.Sleep(config_.fingerprint_period) || root->Wait());
    if (r.index() == 1)
      break;
    auto probe = FingerprintEngine(engine_);
    auto fp = co_await (std::move(probe) || root->Wait());
    if (fp.index() == 1)
      break;
    const bool was_healthy = fingerprint_.healthy;
    SetFingerprint(std::get<0>(fp));
    if (!was_healthy && fingerprint_.healthy) {
      // Back (or there for the first time): what the driver could not see at start.
      if (!inventory_known_)
        co_await TakeStock();
      if (!node_id_.empty()) {
        const int removed = co_await RemoveDangling(node_id_);
        if (removed > 0)
          DROVER_LOG_WARN("docker: removed {} containers that no task owns", removed);
      }
    }
  }
}

asio::awaitable<int> DockerDriver::RemoveDangling(std::string node_id) {
  node_id_ = node_id;
  if (!config_.gc_dangling || !fingerprint_.healthy || node_id.empty())
    co_return 0;
  std::string label = std::string(kLabelNodeId) + "=" + node_id;
  auto listed = co_await engine_.ListContainers(label, kMaxContainers);
  if (!listed.ok()) {
    DROVER_LOG_WARN("docker: cannot list containers: {}", listed.status().ToString());
    co_return 0;
  }
  int removed = 0;
  for (const Engine::ContainerSummary& c : *listed) {
    auto task_id = c.labels.find(kLabelTaskId);
    // Running ones only, as Nomad: an exited one may be kept on purpose
    // (gc.container = false).
    if (task_id == c.labels.end() || tasks_.contains(task_id->second) || c.state != "running")
      continue;
    // Still being started (StartTask has not returned): not dangling.
    if (starting_.contains(task_id->second))
      continue;
    if (absl::Status s = co_await engine_.RemoveContainer(c.id, true); !s.ok()) {
      DROVER_LOG_WARN("docker: cannot remove dangling container {}: {}", c.id, s.ToString());
      continue;
    }
    std::error_code ec;
    std::filesystem::remove(StatePath(task_id->second), ec);
    ++removed;
  }
  co_return removed;
}

asio::awaitable<void> DockerDriver::Shutdown() {
  stopped_ = true;
  root_->Cancel();
  while (running_ > 0)
    co_await idle_.Wait();
}

std::shared_ptr<DockerDriver::Task> DockerDriver::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : it->second;
}

std::filesystem::path DockerDriver::StatePath(const std::string& task_id) const {
  return state_dir_ / (ContainerName(task_id) + ".json");
}

std::optional<TaskHandle> DockerDriver::FindUnrecorded(const std::string& id_prefix,
                                                       int64_t exited_after) {
  const Found* best = nullptr;
  std::string best_id;
  // Task ids sort by allocation: only the run of ids with the prefix is looked at.
  for (auto it = inventory_.lower_bound(id_prefix);
       it != inventory_.end() && it->first.starts_with(id_prefix); ++it) {
    const auto& [task_id, found] = *it;
    if (tasks_.contains(task_id))
      continue;
    if (!found.running && found.finished_at <= exited_after)
      continue;
    if (best == nullptr || found.started_at > best->started_at) {
      best = &found;
      best_id = task_id;
    }
  }
  if (best == nullptr)
    return std::nullopt;
  return TaskHandle{.version = 1,
                    .driver = Name(),
                    .task_id = best_id,
                    .started_at = best->started_at,
                    .driver_ref = best->container};
}

absl::Status DockerDriver::RecoverTask(const TaskHandle& handle) {
  if (tasks_.contains(handle.task_id))
    return absl::OkStatus();
  std::string container = handle.driver_ref;
  auto found = inventory_.find(handle.task_id);
  if (container.empty() && found != inventory_.end())
    container = found->second.container;
  if (container.empty() || !IsContainerId(container))
    return absl::NotFoundError("docker: task " + handle.task_id + " has no container");
  // A daemon that answered at start and does not have it: gone. One that did not
  // answer: the watcher finds out once it does.
  if (inventory_known_ && (found == inventory_.end() || found->second.container != container))
    return absl::NotFoundError("docker: container " + container + " of task " + handle.task_id +
                               " is gone");
  auto task = std::make_shared<Task>(executor_, root_);
  // A small local file the agent wrote: read here, as the supervised drivers read theirs.
  absl::StatusOr<TaskState> state = ReadTaskState(StatePath(handle.task_id));
  if (state.ok() && state->container == container) {
    task->state = *std::move(state);
  } else {
    DROVER_LOG_WARN("docker: no state for task {} ({}); its output is not collected",
                    handle.task_id, state.ok() ? "another container" : state.status().ToString());
    task->state.task_id = handle.task_id;
    task->state.container = container;
  }
  task->started_at = common::FromUnixNanos(handle.started_at);
  UseImage(task->state.image_id);
  Track(std::move(task));
  return absl::OkStatus();
}

void DockerDriver::Track(std::shared_ptr<Task> task) {
  tasks_[task->state.task_id] = task;
  Spawn(Watch(task), "docker watch " + task->state.task_id);
  Spawn(Follow(task), "docker logs " + task->state.task_id);
}

asio::awaitable<absl::StatusOr<TaskHandle>> DockerDriver::StartTask(const TaskConfig& config) {
  if (tasks_.contains(config.id) || starting_.contains(config.id))
    co_return absl::AlreadyExistsError("task with ID '" + config.id + "' already started");
  absl::StatusOr<codec::DockerTaskConfig> docker = codec::ParseDockerTaskConfig(config.config);
  if (!docker.ok())
    co_return common::Annotate(docker.status(), "docker: invalid task config");
  if (stopped_)
    co_return absl::UnavailableError("docker: the driver is shutting down");
  if (!fingerprint_.healthy) {
    co_return RecoverableError("docker: the daemon is not available: " +
                               fingerprint_.health_description);
  }
  starting_.insert(config.id);
  absl::StatusOr<std::string> image = co_await EnsureImage(config, *docker);
  absl::StatusOr<std::string> container = absl::UnknownError("not started");
  if (image.ok()) {
    // Held from here, so that image GC cannot take it between the pull and the create.
    UseImage(*image);
    container = co_await CreateAndStart(config, *docker, *image);
    if (!container.ok())
      ReleaseImage(*image);
  } else {
    container = image.status();
  }
  starting_.erase(config.id);
  if (!container.ok())
    co_return container.status();
  auto task = std::make_shared<Task>(executor_, root_);
  task->state = TaskState{.task_id = config.id,
                          .container = *container,
                          .image_id = *image,
                          .logs = config.logs,
                          .cursor = {},
                          .pins = PinDir(config)};
  task->name = config.name;
  task->started_at = clock_.Now();
  Track(task);
  co_return TaskHandle{.version = 1,
                       .driver = Name(),
                       .task_id = config.id,
                       .started_at = common::ToUnixNanos(task->started_at),
                       .driver_ref = *container};
}

asio::awaitable<absl::StatusOr<std::string>> DockerDriver::CreateAndStart(
    const TaskConfig& config, const codec::DockerTaskConfig& docker, std::string image_id) {
  // Bind sources beneath the alloc dir are checked on the file system just before the
  // create (the task could have planted a symlink on an earlier run), and those in the
  // shared alloc dir pinned, since the group's other tasks may be running.
  const std::string pin_dir = PinDir(config);
  auto pin = [config, docker, pin_dir] { return PinBindSources(config, docker, pin_dir); };
  absl::StatusOr<std::map<std::string, std::string>> pinned =
      co_await common::Offload(pool_, std::move(pin));
  if (!pinned.ok())
    co_return pinned.status();
  const std::string pins = pinned->empty() ? "" : pin_dir;
  // The call made first: no temporaries inside co_await (GCC 12).
  auto create = CreateAndStartPinned(config, docker, std::move(image_id), *pinned, pins);
  absl::StatusOr<std::string> id = co_await std::move(create);
  if (!id.ok() && !pins.empty()) {
    auto unpin = [pins] { return UnpinBindSources(pins); };
    if (absl::Status s = co_await common::Offload(pool_, std::move(unpin)); !s.ok())
      DROVER_LOG_WARN("docker: {}", s.ToString());
  }
  co_return id;
}

asio::awaitable<absl::StatusOr<std::string>> DockerDriver::CreateAndStartPinned(
    const TaskConfig& config, const codec::DockerTaskConfig& docker, std::string image_id,
    const std::map<std::string, std::string>& pinned, std::string pins) {
  auto runtimes = fingerprint_.attributes.find("driver.docker.runtimes");
  const bool nvidia = runtimes != fingerprint_.attributes.end() &&
                      absl::StrContains("," + runtimes->second + ",", ",nvidia,");
  absl::StatusOr<codec::Json> spec = ContainerSpec(config, docker, config_, nvidia, pinned);
  if (!spec.ok())
    co_return spec.status();
  // What recovery needs, on disk before the container exists.
  const std::filesystem::path path = StatePath(config.id);
  TaskState state{
      .task_id = config.id, .image_id = image_id, .logs = config.logs, .pins = std::move(pins)};
  auto write = [path, state] { return WriteTaskState(path, state); };
  if (absl::Status s = co_await common::Offload(pool_, std::move(write)); !s.ok())
    co_return common::Annotate(s, "docker: cannot write the task's state");
  const std::string name = ContainerName(config.id);
  // The call made first: no temporaries inside co_await (GCC 12).
  auto create = engine_.CreateContainer(name, *std::move(spec));
  absl::StatusOr<std::string> id = co_await std::move(create);
  if (!id.ok()) {
    // The daemon may have made it before the answer was lost: removed by name.
    if (!absl::IsInvalidArgument(id.status()) && !absl::IsFailedPrecondition(id.status())) {
      std::string by_name = name;
      (void)co_await engine_.RemoveContainer(by_name, true);
    }
    std::error_code ec;
    std::filesystem::remove(path, ec);
    co_return common::Annotate(id.status(), "docker: failed to create container");
  }
  state.container = *id;
  auto rewrite = [path, state] { return WriteTaskState(path, state); };
  absl::Status started = co_await common::Offload(pool_, std::move(rewrite));
  if (started.ok())
    started = co_await engine_.StartContainer(*id);
  if (!started.ok()) {
    // Nothing left behind: the container goes with its state file.
    if (absl::Status s = co_await engine_.RemoveContainer(*id, true); !s.ok())
      DROVER_LOG_WARN("docker: cannot remove container {}: {}", *id, s.ToString());
    std::error_code ec;
    std::filesystem::remove(path, ec);
    co_return common::Annotate(started, "docker: failed to start container " + *id);
  }
  co_return *id;
}

}  // namespace drover::drivers::docker
