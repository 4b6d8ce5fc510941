// The docker driver's images: a task's image loaded from its archive, found, or pulled
// with progress events; and collected once no task has used it for gc.image_delay.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"

#include "codec/docker_config.h"
#include "common/beneath.h"
#include "common/go_duration.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"
#include "drivers/docker/docker_driver.h"

namespace drover::drivers::docker {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// The largest image archive `load` reads (it is sent to the daemon in one request).
constexpr int64_t kMaxLoadBytes = int64_t{512} << 20;
// At most one pull progress event this often.
constexpr common::Duration kProgressEvery = std::chrono::seconds(5);

// `load`'s archive, beneath the task's local/ (where artifacts land) with no symlink
// on the way. Blocking: on the pool.
absl::StatusOr<std::string> ReadArchive(const std::string& task_dir, const std::string& rel) {
  absl::StatusOr<common::UniqueFd> root = common::OpenDirectory(task_dir + "/local");
  if (!root.ok())
    return root.status();
  // Never blocks on a FIFO or device the task left there.
  struct stat st {};
  absl::StatusOr<common::UniqueFd> fd =
      common::OpenRegularBeneath(root->get(), rel, &st, common::Links::kRefuse);
  if (!fd.ok())
    return common::Annotate(fd.status(), "load \"" + rel + "\" is not a file beneath local/");
  if (st.st_size > kMaxLoadBytes)
    return absl::InvalidArgumentError("load \"" + rel + "\" is larger than 512 MiB");
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = read(fd->get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return absl::DataLossError("load \"" + rel + "\": short read");
    done += static_cast<size_t>(n);
  }
  return data;
}

// As Nomad: a pull that failed is retried by the restart policy (the registry or the
// network may come back, credentials may be fixed) unless the image is not there.
absl::Status PullError(const absl::Status& s, const std::string& image) {
  const std::string text = "Failed to pull `" + image + "`: " + std::string(s.message());
  if (absl::IsNotFound(s) || absl::StrContains(s.message(), "not found") ||
      absl::StrContains(s.message(), "manifest unknown"))
    return absl::FailedPreconditionError(text);
  return RecoverableError(text);
}

}  // namespace

asio::awaitable<absl::StatusOr<std::string>> DockerDriver::EnsureImage(
    const TaskConfig& config, const codec::DockerTaskConfig& docker) {
  std::string image = docker.image;
  if (!docker.load.empty()) {
    // One archive in memory at a time (it goes to the daemon in one request).
    auto lock = load_lock_.Lock();
    common::AsyncMutex::Guard guard = co_await std::move(lock);
    auto read = [dir = config.task_dir, rel = docker.load] { return ReadArchive(dir, rel); };
    absl::StatusOr<std::string> archive = co_await common::Offload(pool_, std::move(read));
    if (!archive.ok())
      co_return archive.status();
    if (config.driver_event)
      config.driver_event("Loading image from " + docker.load);
    auto load = engine_.LoadImage(*std::move(archive));
    if (absl::Status s = co_await std::move(load); !s.ok())
      co_return common::Annotate(s, "docker: failed to load image");
  } else {
    auto inspect = engine_.InspectImage(image);
    absl::StatusOr<std::string> id = co_await std::move(inspect);
    if (id.ok() && !docker.force_pull)
      co_return id;
    if (!id.ok() && !absl::IsNotFound(id.status()))
      co_return RecoverableError(std::string(id.status().message()));
    if (absl::Status s = co_await Pull(config, docker); !s.ok())
      co_return s;
  }
  auto inspect = engine_.InspectImage(image);
  absl::StatusOr<std::string> id = co_await std::move(inspect);
  if (!id.ok()) {
    co_return absl::FailedPreconditionError(
        "docker: image \"" + image + "\" is not there: " + std::string(id.status().message()));
  }
  co_return id;
}

asio::awaitable<absl::Status> DockerDriver::Pull(const TaskConfig& config,
                                                 const codec::DockerTaskConfig& docker) {
  common::Duration timeout = std::chrono::minutes(5);
  if (!docker.image_pull_timeout.empty()) {
    absl::StatusOr<common::Duration> d = common::ParseGoDuration(docker.image_pull_timeout);
    if (!d.ok() || *d <= common::Duration::zero())
      co_return absl::InvalidArgumentError("image_pull_timeout \"" + docker.image_pull_timeout +
                                           "\" is not a positive duration");
    timeout = *d;
  }
  const std::function<void(const std::string&)> emit = config.driver_event;
  if (emit)
    emit("Downloading image");
  // Docker's statuses ("Downloading", "Pull complete"), at most one event per period.
  auto last = std::make_shared<common::Time>(clock_.Now());
  common::Clock* clock = &clock_;
  auto progress = [emit, last, clock](const std::string& status) {
    if (!emit || status.empty() || clock->Now() - *last < kProgressEvery)
      return;
    *last = clock->Now();
    emit("Docker image pull progress: " + status.substr(0, 200));
  };
  std::optional<Engine::RegistryAuth> auth;
  if (docker.auth) {
    auth = Engine::RegistryAuth{.username = docker.auth->username,
                                .password = docker.auth->password,
                                .email = docker.auth->email,
                                .server_address = docker.auth->server_address};
  }
  std::string image = docker.image;
  auto pull = engine_.PullImage(image, auth, timeout, progress);
  absl::Status s = co_await std::move(pull);
  if (!s.ok() && auth && docker.auth_soft_fail) {
    // auth_soft_fail: the credentials were refused; try as anyone.
    DROVER_LOG_WARN("docker: pulling {} with credentials failed ({}); trying without", image,
                    s.ToString());
    std::optional<Engine::RegistryAuth> none;
    auto anonymous = engine_.PullImage(image, none, timeout, progress);
    s = co_await std::move(anonymous);
  }
  if (!s.ok())
    co_return PullError(s, image);
  co_return absl::OkStatus();
}

void DockerDriver::UseImage(const std::string& image_id) {
  if (!image_id.empty())
    ++image_users_[image_id].users;
}

void DockerDriver::ReleaseImage(const std::string& image_id) {
  auto it = image_users_.find(image_id);
  if (it == image_users_.end())
    return;
  if (--it->second.users > 0)
    return;
  // A collector per release; only the one of the latest release acts.
  const uint64_t generation = ++it->second.generation;
  if (config_.gc_image)
    Spawn(CollectImage(image_id, generation), "docker image gc " + image_id);
}

asio::awaitable<void> DockerDriver::CollectImage(std::string image_id, uint64_t generation) {
  const common::CancellationScopePtr root = root_;
  auto r = co_await (clock_.Sleep(config_.gc_image_delay) || root->Wait());
  if (r.index() == 1)
    co_return;  // shutting down: the next agent decides
  auto it = image_users_.find(image_id);
  if (it == image_users_.end() || it->second.users > 0 || it->second.generation != generation)
    co_return;  // in use again, or released again later
  image_users_.erase(it);
  // Not forced: the daemon refuses an image some container (ours or anyone's) uses.
  auto remove = engine_.RemoveImage(image_id, false);
  if (absl::Status s = co_await std::move(remove); !s.ok())
    DROVER_LOG_INFO("docker: image {} not removed: {}", image_id, s.ToString());
}

}  // namespace drover::drivers::docker
