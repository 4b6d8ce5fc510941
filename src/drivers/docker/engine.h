// The Docker Engine API over its unix socket (docs/drivers.md#docker): the docker
// driver's one way to its daemon. Each call is one HTTP/1.1 exchange on a new
// connection (rpc::SendHttp), bounded in time and in the size of the answer, run on the
// control loop without blocking it.
//
// Not yet a driver: the client registers no `docker` driver until it can run tasks
// (issue 21); this is the part that speaks to the daemon and fingerprints it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/asio.h"
#include "common/clock.h"

namespace drover::drivers::docker {

// The API versions Drover speaks: 1.41 is Docker 20.10's (Debian 12's docker.io), and
// what Drover asks for of a newer daemon; 1.24 (Docker 1.12) the oldest.
inline constexpr char kMaxApiVersion[] = "1.41";
inline constexpr char kMinApiVersion[] = "1.24";

// The plugin's `endpoint` ("unix:///var/run/docker.sock", Nomad's form) as an rpc
// address ("unix:/var/run/docker.sock"). InvalidArgument for anything else: Drover
// speaks to a local daemon only (no tcp://, no TLS).
absl::StatusOr<std::string> EndpointAddress(std::string_view endpoint);

// Whether `id` may go into a URL as a container ID or name: letters, digits, '-', '_'
// and '.', at most 256 bytes (what Docker makes, and the names Drover gives).
bool IsContainerId(std::string_view id);

// "1.41" < "1.9"? No: API versions compare as numbers, part by part.
int CompareApiVersions(std::string_view a, std::string_view b);

struct EngineVersion {
  std::string version;          // "20.10.24+dfsg1"
  std::string api_version;      // the daemon's newest
  std::string min_api_version;  // the daemon's oldest
  std::string os;               // "linux"
};

class Engine {
 public:
  // `address` as EndpointAddress makes it.
  explicit Engine(std::string address) : address_(std::move(address)) {}

  // GET /_ping: OK when the daemon answers "OK".
  asio::awaitable<absl::Status> Ping();
  // GET /version, and picks the API version every later call uses: the daemon's newest,
  // at most kMaxApiVersion. FailedPrecondition for a daemon older than kMinApiVersion, or
  // one whose oldest is newer than kMaxApiVersion.
  asio::awaitable<absl::StatusOr<EngineVersion>> Negotiate();
  // The API version Negotiate picked ("" before).
  const std::string& api_version() const { return api_version_; }

  struct Reply {
    int status = 0;
    codec::Json body;  // null for an empty or non-JSON body
    std::string raw;   // the body as sent (a progress stream is JSON lines)
  };
  // `method` `path` ("/containers/json") under the negotiated version, with a JSON
  // body. Any status comes back as a Reply; transport errors and answers over
  // `max_body_bytes` are errors. FailedPrecondition before Negotiate.
  asio::awaitable<absl::StatusOr<Reply>> Call(std::string method, std::string path,
                                              std::string body = "",
                                              common::Duration timeout = std::chrono::seconds(30),
                                              size_t max_body_bytes = 16 << 20);

  // Containers and images (the calls the driver makes). Errors carry the daemon's
  // message; NotFound for a container or image that is not there.
  struct ContainerState {
    std::string status;  // "created", "running", "exited", ...
    bool running = false;
    bool oom_killed = false;
    int exit_code = 0;
    int pid = 0;
    std::string started_at;
    std::string finished_at;
    std::string error;
  };
  // POST /images/create?fromSrc=- : a root file system as a tar, tagged repo:tag.
  asio::awaitable<absl::Status> ImportImage(std::string tar, std::string repo, std::string tag);
  // POST /build?t=: an image built from `context` (a tar with a Dockerfile at its root)
  // by the daemon's builder, tagged `tag`. The build's error as the error. (Tests make
  // their images with it; the driver never builds.)
  asio::awaitable<absl::Status> BuildImage(std::string context, std::string tag);
  // Credentials for a registry (the task's `auth`), sent as X-Registry-Auth.
  struct RegistryAuth {
    std::string username;
    std::string password;
    std::string email;
    std::string server_address;
  };
  // POST /images/create?fromImage=: pulls `ref` ("[host[:port]/]path[:tag]", "latest"
  // when no tag), reporting each progress line's status to `progress` (Docker's
  // "Downloading", "Pull complete"...). The daemon's error (unauthorized, not found) as
  // the error; DeadlineExceeded after `timeout` (image_pull_timeout).
  asio::awaitable<absl::Status> PullImage(std::string ref, std::optional<RegistryAuth> auth,
                                          common::Duration timeout,
                                          std::function<void(const std::string&)> progress);
  // POST /images/:name/tag, and /images/:name/push (tests fill their registry with it).
  asio::awaitable<absl::Status> TagImage(std::string source, std::string ref);
  asio::awaitable<absl::Status> PushImage(std::string ref, std::optional<RegistryAuth> auth);
  // POST /images/load: an image archive (`docker save`'s, the task's `load`), read by
  // the caller beneath the task dir. The daemon's error as the error.
  asio::awaitable<absl::Status> LoadImage(std::string archive);
  // GET /images/:ref/get: the image as such an archive (tests make one with it), at most
  // `max_bytes`.
  asio::awaitable<absl::StatusOr<std::string>> SaveImage(std::string ref, size_t max_bytes);
  // DELETE /images/:ref?force=: without force, the daemon refuses an image a container
  // still uses.
  asio::awaitable<absl::Status> RemoveImage(std::string ref, bool force);
  // GET /images/:ref/json: the image's ID.
  asio::awaitable<absl::StatusOr<std::string>> InspectImage(std::string ref);
  // POST /containers/create?name= with `config` (the Engine API's ContainerConfig with
  // HostConfig): the container's ID.
  asio::awaitable<absl::StatusOr<std::string>> CreateContainer(std::string name,
                                                               codec::Json config);
  asio::awaitable<absl::Status> StartContainer(std::string id);
  // POST /containers/:id/wait: once the container is not running, its exit code. No
  // time bound but the caller's cancellation.
  asio::awaitable<absl::StatusOr<int>> WaitContainer(std::string id);
  asio::awaitable<absl::StatusOr<ContainerState>> InspectContainer(std::string id);
  // POST /containers/:id/stop?t=: the image's stop signal (SIGTERM unless it says
  // otherwise), then SIGKILL after `timeout` (whole seconds, rounded up). OK for a
  // container that was not running.
  asio::awaitable<absl::Status> StopContainer(std::string id, common::Duration timeout);
  // POST /containers/:id/kill?signal=
  asio::awaitable<absl::Status> SignalContainer(std::string id, std::string signal);
  // DELETE /containers/:id?force=
  asio::awaitable<absl::Status> RemoveContainer(std::string id, bool force);
  // The containers (running or not) with `label` ("key" or "key=value"): their IDs,
  // labels and states, at most `max_containers` of them.
  struct ContainerSummary {
    std::string id;
    std::string state;    // "running", "exited", ...
    int64_t created = 0;  // Unix seconds
    std::map<std::string, std::string> labels;
  };
  asio::awaitable<absl::StatusOr<std::vector<ContainerSummary>>> ListContainers(
      std::string label, size_t max_containers);

  const std::string& address() const { return address_; }

 private:
  asio::awaitable<absl::StatusOr<Reply>> Send(std::string method, std::string path,
                                              std::string body, common::Duration timeout,
                                              size_t max_body_bytes, std::string content_type);
  // Call, then OK for a 2xx; the daemon's message otherwise (NotFound for 404).
  asio::awaitable<absl::StatusOr<Reply>> Expect(std::string method, std::string path,
                                                std::string body = "",
                                                common::Duration timeout = std::chrono::seconds(30),
                                                std::string content_type = "");
  // POSTs a tar archive to `path` and reads the progress stream it answers with: OK
  // unless the call or the stream failed (`what` names the step in the error).
  asio::awaitable<absl::Status> PostTar(std::string path, std::string tar, common::Duration timeout,
                                        std::string what);

  std::string address_;
  std::string api_version_;
};

// What the client's fingerprint says of the daemon (Nomad's docker driver attributes):
// driver.docker, driver.docker.version, driver.docker.runtimes (sorted, comma-separated),
// driver.docker.os_type, and driver.docker.bridge_ip when a `bridge` network has a
// gateway. Unhealthy, with the reason, while the daemon does not answer or is too old.
struct Fingerprint {
  bool healthy = false;
  std::string health_description;
  std::map<std::string, std::string> attributes;
};
asio::awaitable<Fingerprint> FingerprintEngine(Engine& engine);

}  // namespace drover::drivers::docker
