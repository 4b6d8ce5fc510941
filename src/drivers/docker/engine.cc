#include "drivers/docker/engine.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"

#include "common/percent_encode.h"
#include "rpc/http_call.h"

namespace drover::drivers::docker {

namespace {

constexpr common::Duration kProbeTimeout = std::chrono::seconds(5);
constexpr size_t kProbeBodyBytes = 4 << 20;

// The daemon's JSON error body ({"message": ...}), or the status.
std::string ErrorText(const Engine::Reply& reply) {
  if (reply.body.is_object() && reply.body.contains("message") && reply.body["message"].is_string())
    return reply.body["message"].get<std::string>();
  return "HTTP status " + std::to_string(reply.status);
}

std::string StringField(const codec::Json& j, const char* key) {
  if (!j.is_object())
    return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A progress stream (JSON lines) fails with a line holding "error", under a 200:
// its first, "" when none.
std::string ProgressError(std::string_view body) {
  for (size_t at = 0; at < body.size();) {
    size_t nl = body.find('\n', at);
    if (nl == std::string_view::npos)
      nl = body.size();
    absl::StatusOr<codec::Json> line = codec::ParseJson(body.substr(at, nl - at));
    if (line.ok() && !StringField(*line, "error").empty())
      return StringField(*line, "error");
    at = nl + 1;
  }
  return "";
}

}  // namespace

absl::StatusOr<std::string> EndpointAddress(std::string_view endpoint) {
  constexpr std::string_view kUnix = "unix://";
  if (!endpoint.starts_with(kUnix) || endpoint.size() == kUnix.size() ||
      endpoint[kUnix.size()] != '/') {
    return absl::InvalidArgumentError(
        "docker endpoint \"" + std::string(endpoint) +
        "\": only a local daemon's unix socket (unix:///path) is supported");
  }
  return "unix:" + std::string(endpoint.substr(kUnix.size()));
}

int CompareApiVersions(std::string_view a, std::string_view b) {
  const auto parts = [](std::string_view v) {
    std::vector<int> out;
    for (size_t start = 0; start <= v.size();) {
      size_t dot = v.find('.', start);
      if (dot == std::string_view::npos)
        dot = v.size();
      int n = 0;
      std::from_chars(v.data() + start, v.data() + dot, n);
      out.push_back(n);
      start = dot + 1;
    }
    return out;
  };
  const std::vector<int> x = parts(a);
  const std::vector<int> y = parts(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const int l = i < x.size() ? x[i] : 0;
    const int r = i < y.size() ? y[i] : 0;
    if (l != r)
      return l < r ? -1 : 1;
  }
  return 0;
}

asio::awaitable<absl::Status> Engine::Ping() {
  rpc::HttpCall call{.method = "GET", .target = "/_ping"};
  std::string address = address_;
  // Named: no temporaries inside a co_await expression (GCC 12).
  const rpc::HttpCallLimits limits{.max_body_bytes = 1024, .allow_unix = true};
  auto reply = co_await rpc::SendHttp(std::move(address), std::move(call), kProbeTimeout, limits);
  if (!reply.ok())
    co_return reply.status();
  if (reply->status != 200 || reply->body != "OK") {
    co_return absl::UnavailableError("docker daemon at " + address_ + " answered /_ping with " +
                                     std::to_string(reply->status));
  }
  co_return absl::OkStatus();
}

asio::awaitable<absl::StatusOr<EngineVersion>> Engine::Negotiate() {
  rpc::HttpCall call{.method = "GET", .target = "/version"};
  std::string address = address_;
  // Named: no temporaries inside a co_await expression (GCC 12).
  const rpc::HttpCallLimits limits{.max_body_bytes = kProbeBodyBytes, .allow_unix = true};
  auto reply = co_await rpc::SendHttp(std::move(address), std::move(call), kProbeTimeout, limits);
  if (!reply.ok())
    co_return reply.status();
  absl::StatusOr<codec::Json> body = codec::ParseJson(reply->body);
  if (reply->status != 200 || !body.ok() || !body->is_object()) {
    co_return absl::UnavailableError("docker daemon at " + address_ +
                                     " answered /version with status " +
                                     std::to_string(reply->status));
  }
  EngineVersion v{.version = StringField(*body, "Version"),
                  .api_version = StringField(*body, "ApiVersion"),
                  .min_api_version = StringField(*body, "MinAPIVersion"),
                  .os = StringField(*body, "Os")};
  if (v.api_version.empty() || CompareApiVersions(v.api_version, kMinApiVersion) < 0) {
    co_return absl::FailedPreconditionError("docker API version " + v.api_version +
                                            " is older than " + kMinApiVersion +
                                            ", the oldest Drover speaks");
  }
  if (!v.min_api_version.empty() && CompareApiVersions(v.min_api_version, kMaxApiVersion) > 0) {
    co_return absl::FailedPreconditionError("docker daemon speaks API " + v.min_api_version +
                                            " and newer only; Drover speaks up to " +
                                            kMaxApiVersion);
  }
  api_version_ =
      CompareApiVersions(v.api_version, kMaxApiVersion) > 0 ? kMaxApiVersion : v.api_version;
  co_return v;
}

asio::awaitable<absl::StatusOr<Engine::Reply>> Engine::Call(std::string method, std::string path,
                                                            std::string body,
                                                            common::Duration timeout,
                                                            size_t max_body_bytes) {
  auto send = Send(std::move(method), std::move(path), std::move(body), timeout, max_body_bytes,
                   std::string());
  co_return co_await std::move(send);
}

asio::awaitable<absl::StatusOr<Engine::Reply>> Engine::Send(std::string method, std::string path,
                                                            std::string body,
                                                            common::Duration timeout,
                                                            size_t max_body_bytes,
                                                            std::string content_type) {
  if (api_version_.empty())
    co_return absl::FailedPreconditionError("docker API version not negotiated yet");
  rpc::HttpCall call{.method = std::move(method),
                     .target = "/v" + api_version_ + path,
                     .headers = {},
                     .body = std::move(body)};
  if (!content_type.empty())
    call.headers["Content-Type"] = std::move(content_type);
  std::string address = address_;
  // Named: no temporaries inside a co_await expression (GCC 12).
  const rpc::HttpCallLimits limits{.max_body_bytes = max_body_bytes, .allow_unix = true};
  auto reply = co_await rpc::SendHttp(std::move(address), std::move(call), timeout, limits);
  if (!reply.ok())
    co_return reply.status();
  Reply out{.status = reply->status};
  if (!reply->body.empty()) {
    absl::StatusOr<codec::Json> parsed = codec::ParseJson(reply->body);
    if (parsed.ok())
      out.body = *std::move(parsed);
  }
  out.raw = std::move(reply->body);
  co_return out;
}

namespace {

// A query value, percent-encoded (image references hold '/' and ':').
std::string Query(std::string_view v) {
  return common::PercentEncode(v);
}

// An ID or name as one path segment: what the daemon made or Drover named; anything
// else is refused before it reaches a URL.
bool SafeSegment(std::string_view s) {
  return !s.empty() && s.size() <= 256 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

bool IsContainerId(std::string_view id) {
  return SafeSegment(id);
}

asio::awaitable<absl::StatusOr<Engine::Reply>> Engine::Expect(std::string method, std::string path,
                                                              std::string body,
                                                              common::Duration timeout,
                                                              std::string content_type) {
  const std::string what = method + " " + path;
  auto send = Send(std::move(method), std::move(path), std::move(body), timeout, kProbeBodyBytes,
                   std::move(content_type));
  auto reply = co_await std::move(send);
  if (!reply.ok())
    co_return reply.status();
  // 304: already started (or stopped), which is what was asked for.
  if ((reply->status >= 200 && reply->status < 300) || reply->status == 304)
    co_return reply;
  const std::string message = "docker: " + what + ": " + ErrorText(*reply);
  if (reply->status == 404)
    co_return absl::NotFoundError(message);
  if (reply->status == 409)
    co_return absl::FailedPreconditionError(message);
  if (reply->status == 400)
    co_return absl::InvalidArgumentError(message);
  co_return absl::InternalError(message);
}

asio::awaitable<absl::Status> Engine::PostTar(std::string path, std::string tar,
                                              common::Duration timeout, std::string what) {
  std::string method = "POST", type = "application/x-tar";
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), std::move(tar), timeout, type);
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  if (const std::string error = ProgressError(reply->raw); !error.empty())
    co_return absl::InternalError("docker: " + what + ": " + error);
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> Engine::ImportImage(std::string tar, std::string repo,
                                                  std::string tag) {
  std::string path = "/images/create?fromSrc=-&repo=" + Query(repo) + "&tag=" + Query(tag);
  auto post = PostTar(std::move(path), std::move(tar), std::chrono::minutes(2), "image import");
  co_return co_await std::move(post);
}

asio::awaitable<absl::Status> Engine::BuildImage(std::string context, std::string tag) {
  std::string path = "/build?rm=1&forcerm=1&t=" + Query(tag);
  auto post = PostTar(std::move(path), std::move(context), std::chrono::minutes(5), "image build");
  co_return co_await std::move(post);
}

namespace {

// "host:5000/team/web:1.2" → ("host:5000/team/web", "1.2"); no tag: "latest". A digest
// ("@sha256:...") stays with the repository.
std::pair<std::string, std::string> SplitReference(const std::string& ref) {
  if (ref.find('@') != std::string::npos)
    return {ref, ""};
  const size_t colon = ref.rfind(':');
  const size_t slash = ref.rfind('/');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash))
    return {ref, "latest"};
  return {ref.substr(0, colon), ref.substr(colon + 1)};
}

std::string AuthHeader(const Engine::RegistryAuth& auth) {
  const codec::Json j = {{"username", auth.username},
                         {"password", auth.password},
                         {"email", auth.email},
                         {"serveraddress", auth.server_address}};
  // Go's base64.URLEncoding: the URL-safe alphabet, with padding (which the daemon's
  // decoder requires: without it the credentials are silently dropped).
  std::string encoded = absl::Base64Escape(codec::Dump(j));
  for (char& c : encoded) {
    if (c == '+')
      c = '-';
    else if (c == '/')
      c = '_';
  }
  return encoded;
}

}  // namespace

asio::awaitable<absl::Status> Engine::PullImage(std::string ref, std::optional<RegistryAuth> auth,
                                                common::Duration timeout,
                                                std::function<void(const std::string&)> progress) {
  if (api_version_.empty())
    co_return absl::FailedPreconditionError("docker API version not negotiated yet");
  if (ref.empty() || ref.size() > 512)
    co_return absl::InvalidArgumentError("docker: image reference is empty or too long");
  const auto [repo, tag] = SplitReference(ref);
  rpc::HttpCall call{.method = "POST",
                     .target = "/v" + api_version_ + "/images/create?fromImage=" + Query(repo) +
                               (tag.empty() ? "" : "&tag=" + Query(tag))};
  if (auth)
    call.headers["X-Registry-Auth"] = AuthHeader(*auth);
  // The progress stream of a large image is long: read as it comes, a line at a time.
  const rpc::HttpCallLimits limits{.max_body_bytes = size_t{256} << 20, .allow_unix = true};
  std::string address = address_;
  auto stream =
      co_await rpc::HttpStream::Open(std::move(address), std::move(call), timeout, limits);
  if (!stream.ok())
    co_return stream.status();
  const int status = (*stream)->head().status;
  const common::Time deadline = common::RealClock().Now() + timeout;
  std::string pending;
  for (;;) {
    if (common::RealClock().Now() > deadline)
      co_return absl::DeadlineExceededError("docker: pulling " + ref + ": image_pull_timeout");
    absl::StatusOr<std::string> piece = co_await (*stream)->Next();
    if (!piece.ok())
      co_return piece.status();
    if (piece->empty())
      break;
    pending += *piece;
    if (status != 200) {
      if (pending.size() > 64 * 1024)
        break;
      continue;
    }
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      absl::StatusOr<codec::Json> line = codec::ParseJson(std::string_view(pending).substr(0, nl));
      pending.erase(0, nl + 1);
      if (!line.ok())
        continue;
      if (const std::string error = StringField(*line, "error"); !error.empty())
        co_return absl::InternalError("docker: pulling " + ref + ": " + error);
      if (progress && !StringField(*line, "status").empty())
        progress(StringField(*line, "status"));
    }
    if (pending.size() > 64 * 1024)
      co_return absl::InternalError("docker: pulling " + ref + ": a progress line over 64 KiB");
  }
  if (status != 200) {
    Reply reply{.status = status, .body = nullptr, .raw = pending};
    if (absl::StatusOr<codec::Json> body = codec::ParseJson(pending); body.ok())
      reply.body = *std::move(body);
    const std::string message = "docker: pulling " + ref + ": " + ErrorText(reply);
    co_return status == 404 ? absl::NotFoundError(message) : absl::InternalError(message);
  }
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> Engine::TagImage(std::string source, std::string ref) {
  const auto [repo, tag] = SplitReference(ref);
  std::string method = "POST",
              path = "/images/" + Query(source) + "/tag?repo=" + Query(repo) + "&tag=" + Query(tag),
              none;
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  co_return reply.status();
}

asio::awaitable<absl::Status> Engine::PushImage(std::string ref, std::optional<RegistryAuth> auth) {
  if (api_version_.empty())
    co_return absl::FailedPreconditionError("docker API version not negotiated yet");
  const auto [repo, tag] = SplitReference(ref);
  rpc::HttpCall call{
      .method = "POST",
      .target = "/v" + api_version_ + "/images/" + Query(repo) + "/push?tag=" + Query(tag)};
  // The daemon wants the header even for a registry without auth.
  call.headers["X-Registry-Auth"] = AuthHeader(auth.value_or(RegistryAuth{}));
  const rpc::HttpCallLimits limits{.max_body_bytes = kProbeBodyBytes, .allow_unix = true};
  std::string address = address_;
  const common::Duration push_timeout = std::chrono::minutes(5);
  auto reply = co_await rpc::SendHttp(std::move(address), std::move(call), push_timeout, limits);
  if (!reply.ok())
    co_return reply.status();
  if (reply->status != 200)
    co_return absl::InternalError("docker: pushing " + ref + ": HTTP status " +
                                  std::to_string(reply->status) + ": " + reply->body);
  if (const std::string error = ProgressError(reply->body); !error.empty())
    co_return absl::InternalError("docker: pushing " + ref + ": " + error);
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> Engine::LoadImage(std::string archive) {
  std::string method = "POST", path = "/images/load?quiet=1", type = "application/x-tar";
  auto expect = Expect(method, std::move(path), std::move(archive), std::chrono::minutes(5), type);
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  if (const std::string error = ProgressError(reply->raw); !error.empty())
    co_return absl::InvalidArgumentError("docker: loading an image: " + error);
  co_return absl::OkStatus();
}

asio::awaitable<absl::StatusOr<std::string>> Engine::SaveImage(std::string ref, size_t max_bytes) {
  std::string method = "GET", path = "/images/" + Query(ref) + "/get", none;
  auto call = Call(method, std::move(path), none, std::chrono::minutes(5), max_bytes);
  auto reply = co_await std::move(call);
  if (!reply.ok())
    co_return reply.status();
  if (reply->status != 200)
    co_return absl::NotFoundError("docker: saving " + ref + ": " + ErrorText(*reply));
  co_return std::move(reply->raw);
}

asio::awaitable<absl::Status> Engine::RemoveImage(std::string ref, bool force) {
  std::string method = "DELETE",
              path = "/images/" + Query(ref) + "?force=" + (force ? "true" : "false"), none;
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  co_return reply.status();
}

asio::awaitable<absl::StatusOr<std::string>> Engine::InspectImage(std::string ref) {
  if (ref.empty() || ref.size() > 512)
    co_return absl::InvalidArgumentError("docker: image reference is empty or too long");
  std::string method = "GET", path = "/images/" + Query(ref) + "/json", none;
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  co_return StringField(reply->body, "Id");
}

asio::awaitable<absl::StatusOr<std::string>> Engine::CreateContainer(std::string name,
                                                                     codec::Json config) {
  if (!SafeSegment(name))
    co_return absl::InvalidArgumentError("docker: container name \"" + name + "\" is not valid");
  std::string method = "POST", path = "/containers/create?name=" + name;
  std::string body = codec::Dump(config);
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), std::move(body));
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  std::string id = StringField(reply->body, "Id");
  if (!SafeSegment(id))
    co_return absl::InternalError("docker: create answered without a container ID");
  co_return id;
}

asio::awaitable<absl::Status> Engine::StartContainer(std::string id) {
  if (!SafeSegment(id))
    co_return absl::InvalidArgumentError("docker: container ID \"" + id + "\" is not valid");
  std::string method = "POST", path = "/containers/" + id + "/start", none;
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  co_return reply.status();
}

asio::awaitable<absl::StatusOr<int>> Engine::WaitContainer(std::string id) {
  if (!SafeSegment(id))
    co_return absl::InvalidArgumentError("docker: container ID \"" + id + "\" is not valid");
  std::string method = "POST", path = "/containers/" + id + "/wait?condition=not-running", none;
  // A task runs as long as it runs: no bound here but the caller's cancellation.
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none, std::chrono::hours(24 * 365));
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  const codec::Json& body = reply->body;
  if (!body.is_object() || !body.contains("StatusCode") || !body["StatusCode"].is_number_integer())
    co_return absl::InternalError("docker: wait answered without a StatusCode");
  co_return body["StatusCode"].get<int>();
}

asio::awaitable<absl::StatusOr<Engine::ContainerState>> Engine::InspectContainer(std::string id) {
  if (!SafeSegment(id))
    co_return absl::InvalidArgumentError("docker: container ID \"" + id + "\" is not valid");
  std::string method = "GET", path = "/containers/" + id + "/json", none;
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  const codec::Json* state =
      reply->body.is_object() && reply->body.contains("State") ? &reply->body["State"] : nullptr;
  if (state == nullptr || !state->is_object())
    co_return absl::InternalError("docker: inspect answered without a State");
  ContainerState out;
  out.status = StringField(*state, "Status");
  // Checked: a daemon's odd answer is not an exception.
  const auto flag = [&](const char* key) {
    auto it = state->find(key);
    return it != state->end() && it->is_boolean() && it->get<bool>();
  };
  const auto number = [&](const char* key) {
    auto it = state->find(key);
    return it != state->end() && it->is_number_integer() ? it->get<int>() : 0;
  };
  out.running = flag("Running");
  out.oom_killed = flag("OOMKilled");
  out.exit_code = number("ExitCode");
  out.pid = number("Pid");
  out.started_at = StringField(*state, "StartedAt");
  out.finished_at = StringField(*state, "FinishedAt");
  out.error = StringField(*state, "Error");
  co_return out;
}

asio::awaitable<absl::Status> Engine::SignalContainer(std::string id, std::string signal) {
  if (!SafeSegment(id) || !SafeSegment(signal))
    co_return absl::InvalidArgumentError("docker: container ID or signal is not valid");
  std::string method = "POST", path = "/containers/" + id + "/kill?signal=" + signal, none;
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  co_return reply.status();
}

asio::awaitable<absl::Status> Engine::StopContainer(std::string id, common::Duration timeout) {
  if (!SafeSegment(id))
    co_return absl::InvalidArgumentError("docker: container ID \"" + id + "\" is not valid");
  const int64_t seconds =
      std::max<int64_t>(0, std::chrono::ceil<std::chrono::seconds>(timeout).count());
  std::string method = "POST", path = "/containers/" + id + "/stop?t=" + std::to_string(seconds),
              none;
  // The daemon answers once the container has stopped: the kill timeout and then some.
  const common::Duration limit = std::chrono::seconds(seconds + 30);
  auto call = Call(method, std::move(path), none, limit);
  auto reply = co_await std::move(call);
  if (!reply.ok())
    co_return reply.status();
  if (reply->status == 204 || reply->status == 304)
    co_return absl::OkStatus();
  co_return reply->status == 404
      ? absl::NotFoundError("docker: no container " + id)
      : absl::InternalError("docker: stop " + id + ": " + ErrorText(*reply));
}

asio::awaitable<absl::Status> Engine::RemoveContainer(std::string id, bool force) {
  if (!SafeSegment(id))
    co_return absl::InvalidArgumentError("docker: container ID \"" + id + "\" is not valid");
  std::string method = "DELETE",
              path = "/containers/" + id + "?v=true&force=" + (force ? "true" : "false"), none;
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  co_return reply.status();
}

asio::awaitable<absl::StatusOr<std::vector<Engine::ContainerSummary>>> Engine::ListContainers(
    std::string label, size_t max_containers) {
  const codec::Json filters = {{"label", codec::Json::array({label})}};
  std::string method = "GET",
              path = "/containers/json?all=true&filters=" + Query(codec::Dump(filters)), none;
  // The call made first: no default arguments or temporaries inside co_await (GCC 12).
  auto expect = Expect(method, std::move(path), none);
  auto reply = co_await std::move(expect);
  if (!reply.ok())
    co_return reply.status();
  std::vector<ContainerSummary> out;
  if (!reply->body.is_array())
    co_return out;
  for (const codec::Json& c : reply->body) {
    if (out.size() >= max_containers)
      break;
    ContainerSummary summary;
    summary.id = StringField(c, "Id");
    if (!SafeSegment(summary.id))
      continue;
    summary.state = StringField(c, "State");
    if (auto created = c.find("Created"); created != c.end() && created->is_number_integer())
      summary.created = created->get<int64_t>();
    if (auto labels = c.find("Labels"); labels != c.end() && labels->is_object()) {
      for (const auto& [k, v] : labels->items()) {
        if (v.is_string())
          summary.labels[k] = v.get<std::string>();
      }
    }
    out.push_back(std::move(summary));
  }
  co_return out;
}

asio::awaitable<Fingerprint> FingerprintEngine(Engine& engine) {
  Fingerprint fp;
  absl::StatusOr<EngineVersion> version = co_await engine.Negotiate();
  if (!version.ok()) {
    fp.health_description =
        "Failed to connect to docker daemon: " + std::string(version.status().message());
    co_return fp;
  }
  // Named: no temporaries inside a co_await expression (GCC 12, docs/threading.md).
  std::string get = "GET", info_path = "/info", bridge_path = "/networks/bridge", none;
  auto info = co_await engine.Call(get, info_path, none, kProbeTimeout, kProbeBodyBytes);
  if (!info.ok() || info->status != 200) {
    fp.health_description = "Failed to connect to docker daemon: /info: " +
                            (info.ok() ? ErrorText(*info) : std::string(info.status().message()));
    co_return fp;
  }
  fp.healthy = true;
  fp.health_description = "Healthy";
  fp.attributes["driver.docker"] = "1";
  fp.attributes["driver.docker.version"] = version->version;
  fp.attributes["driver.docker.os_type"] = StringField(info->body, "OSType");
  std::set<std::string> runtimes;
  if (auto it = info->body.find("Runtimes"); it != info->body.end() && it->is_object()) {
    for (const auto& [name, runtime] : it->items())
      runtimes.insert(name);
  }
  fp.attributes["driver.docker.runtimes"] = absl::StrJoin(runtimes, ",");
  // The default bridge's gateway, when there is one (a daemon run with --bridge=none
  // has none).
  auto bridge = co_await engine.Call(get, bridge_path, none, kProbeTimeout, kProbeBodyBytes);
  if (bridge.ok() && bridge->status == 200 && bridge->body.is_object()) {
    const codec::Json* config = nullptr;
    if (auto ipam = bridge->body.find("IPAM"); ipam != bridge->body.end() && ipam->is_object()) {
      if (auto c = ipam->find("Config"); c != ipam->end() && c->is_array() && !c->empty())
        config = &(*c)[0];
    }
    if (config != nullptr && !StringField(*config, "Gateway").empty())
      fp.attributes["driver.docker.bridge_ip"] = StringField(*config, "Gateway");
  }
  co_return fp;
}

}  // namespace drover::drivers::docker
