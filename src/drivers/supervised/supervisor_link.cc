#include "drivers/supervised/supervisor_link.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/fds.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

extern char** environ;

namespace drover::drivers {

namespace fs = std::filesystem;
using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;                     // NOLINT(google-build-using-namespace)

namespace {

constexpr auto kConnectRetry = 20ms;
constexpr auto kReconnectMin = 100ms;
constexpr auto kReconnectMax = 5000ms;

asio::awaitable<void> SleepFor(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// The last lines of the supervisor's own log, for an error that says why it did not
// come up.
std::string LogTail(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > 3)
      lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines)
    out += (out.empty() ? "" : " | ") + l;
  return out;
}

// The drover-reaper already running for `state_dir` (its pid file names a live process
// of that name whose journal is there), or 0.
pid_t LiveReaper(const fs::path& state_dir) {
  std::ifstream pid_file(state_dir / "reaper.pid");
  pid_t pid = 0;
  if (!(pid_file >> pid) || pid <= 1)
    return 0;
  const fs::path proc = "/proc/" + std::to_string(pid);
  std::ifstream comm(proc / "comm");
  std::string name;
  std::getline(comm, name);
  if (name != "drover-reaper")
    return 0;
  std::ifstream cmdline(proc / "cmdline");
  // Through rdbuf: a reaper that exits meanwhile fails the read (ESRCH), which an
  // istreambuf_iterator would throw.
  std::ostringstream read;
  read << cmdline.rdbuf();
  const std::string args = read.str();
  const std::string journal = (state_dir / "exits.journal").string();
  return args.find(std::string("\0", 1) + journal + std::string("\0", 1)) != std::string::npos ? pid
                                                                                               : 0;
}

// drover-reaper's command line, which starts the supervisor as its child; both read
// the journal path.
std::vector<std::string> LaunchCommand(const SupervisorLinkOptions& o, const fs::path& reaper,
                                       const std::string& socket) {
  const std::string state = (o.dir / "state").string();
  const std::string journal = (o.dir / "state" / "exits.journal").string();
  return {reaper.string(), "-journal", journal,    "--",    o.binary.string(), "-socket",  socket,
          "-state-dir",    state,      "-journal", journal, "-log-level",      o.log_level};
}

}  // namespace

fs::path DefaultSupervisorBinary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (ec ? fs::current_path() : self.parent_path()) / "drover-supervisor";
}

SupervisorLink::SupervisorLink(asio::any_io_executor executor, SupervisorLinkOptions options)
    : executor_(executor),
      options_(std::move(options)),
      stop_(common::CancellationScope::Create(executor)),
      start_slots_(executor, kStartSlots) {}

SupervisorLink::~SupervisorLink() {
  *alive_ = false;
  Close();
}

void SupervisorLink::Close() {
  closed_ = true;
  stop_->Cancel();
  if (client_) {
    client_->on_disconnect = nullptr;
    client_->on_exit = nullptr;
    client_->Close();
  }
  health_ = absl::UnavailableError("connection to the supervisor closed");
}

const supervisor::TaskInfo* SupervisorLink::Find(const std::string& task_id) const {
  auto it = known_.find(task_id);
  return it == known_.end() ? nullptr : &it->second;
}

std::vector<std::string> SupervisorLink::TaskIds() const {
  std::vector<std::string> ids;
  for (const auto& [id, info] : known_)
    ids.push_back(id);
  return ids;
}

int SupervisorLink::Subscribe(ExitListener listener) {
  const int token = next_token_++;
  listeners_[token] = std::move(listener);
  return token;
}

void SupervisorLink::Unsubscribe(int token) {
  listeners_.erase(token);
}

asio::awaitable<absl::Status> SupervisorLink::Start() {
  absl::Status s = co_await EnsureConnected();
  if (!s.ok())
    DROVER_LOG_ERROR("supervisor: {}", s.ToString());
  co_return s;
}

asio::awaitable<absl::Status> SupervisorLink::EnsureConnected() {
  if (closed_)
    co_return absl::UnavailableError("the supervisor link is closed");
  if (connected())
    co_return absl::OkStatus();
  if (connecting_) {
    // Someone else is connecting: share the outcome.
    auto done = connect_done_;
    co_await done->Wait();
    co_return connected() ? absl::OkStatus() : health_;
  }
  connecting_ = true;
  connect_done_ = std::make_shared<common::Event>(executor_);
  auto done = connect_done_;
  auto alive = alive_;
  absl::Status s = co_await ConnectOrLaunch();
  if (s.ok())
    s = co_await Sync();
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!s.ok() && client_ != nullptr && client_->connected()) {
    // Connected but not in sync (exits may be missing): not usable; the next call or
    // the reconnect loop starts over.
    client_->on_disconnect = nullptr;
    client_->Close();
  }
  health_ = s;
  connecting_ = false;
  done->Set();
  co_return s;
}

asio::awaitable<absl::Status> SupervisorLink::TryConnect() {
  auto alive = alive_;
  auto client = std::make_unique<supervisor::Client>(executor_);
  const std::filesystem::path socket = options_.dir / "supervisor.sock";
  absl::Status s = co_await client->Connect(socket);
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!s.ok())
    co_return s;
  supervisor::Json request = {{"op", "info"}};  // named: see GCC 12 in development.md
  auto info = co_await client->Call(std::move(request));
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!info.ok())
    co_return info.status();
  supervisor_pid_ = info->value("pid", 0);
  ++stats_.connects;
  client->on_exit = [this](const supervisor::TaskInfo& t) { OnExit(t); };
  client->on_disconnect = [this] { OnDisconnect(); };
  if (client_)
    retired_.push_back(std::move(client_));
  client_ = std::move(client);
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> SupervisorLink::ConnectOrLaunch() {
  auto alive = alive_;
  absl::Status s = co_await TryConnect();
  if (s.ok() || !*alive)
    co_return s;
  // Nobody answers (none started yet, or it died and left its socket file): start one.
  if (absl::Status launched = Launch(); !launched.ok())
    co_return launched;
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  auto asked = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline) {
    co_await SleepFor(kConnectRetry);
    if (!*alive)
      co_return absl::UnavailableError("the supervisor link is gone");
    s = co_await TryConnect();
    if (s.ok() || !*alive)
      co_return s;
    // The one it started may have died too (the reaper would start the next one only
    // after a back-off): ask again each second.
    if (std::chrono::steady_clock::now() - asked >= std::chrono::seconds(1)) {
      asked = std::chrono::steady_clock::now();
      if (absl::Status again = Launch(); !again.ok())
        co_return again;
    }
  }
  const std::string tail = LogTail(options_.dir / "supervisor.log");
  co_return absl::UnavailableError(
      "the supervisor did not come up within " + std::to_string(options_.start_timeout.count()) +
      " ms: " + std::string(s.message()) + (tail.empty() ? "" : "; its log says: " + tail));
}

absl::Status SupervisorLink::Launch() {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec) {
    return absl::InternalError("failed to create supervisor dir '" + options_.dir.string() +
                               "': " + ec.message());
  }
  fs::permissions(options_.dir, fs::perms::owner_all, ec);
  // The state dir holds the reaper's pid file and journal before the supervisor runs.
  fs::create_directories(options_.dir / "state", ec);
  fs::permissions(options_.dir / "state", fs::perms::owner_all, ec);
  if (ec) {
    return absl::InternalError("failed to create '" + (options_.dir / "state").string() +
                               "': " + ec.message());
  }
  // One reaper per node, holding the tasks: when it lives, it starts the supervisor.
  if (const pid_t live = LiveReaper(options_.dir / "state"); live > 0) {
    if (kill(live, SIGUSR1) == 0) {
      DROVER_LOG_INFO("supervisor: asked drover-reaper (pid {}) for a supervisor", live);
      return absl::OkStatus();
    }
  }
  const fs::path reaper =
      options_.reaper.empty() ? options_.binary.parent_path() / "drover-reaper" : options_.reaper;
  for (const fs::path& exe : {options_.binary, reaper}) {
    if (access(exe.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError("cannot run '" + exe.string() +
                                           "': " + std::strerror(errno));
    }
  }
  const std::string socket = (options_.dir / "supervisor.sock").string();
  if (socket.size() >= 108) {
    return absl::InvalidArgumentError("supervisor socket path '" + socket +
                                      "' is too long for a unix socket (108 bytes)");
  }
  std::vector<std::string> args = LaunchCommand(options_, reaper, socket);
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log_path = (options_.dir / "supervisor.log").string();
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0)
    return absl::InternalError("failed to open '" + log_path + "': " + std::strerror(errno));
  // Double fork: the reaper (and the supervisor, its child) is re-parented away from the
  // agent (it must outlive it and never be its zombie) and leads its own session. Only
  // async-signal-safe calls between fork and exec.
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(log_fd);
    return absl::InternalError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    setsid();
    const pid_t grandchild = fork();
    if (grandchild != 0)
      _exit(grandchild < 0 ? 1 : 0);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
      _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig)
      signal(sig, SIG_DFL);
    common::CloseDescriptorsFrom(3, -1);
    common::RestoreDescriptorLimit();  // the supervisor and its tasks: the agent's own
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  close(log_fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return absl::InternalError("failed to start the supervisor (fork)");
  DROVER_LOG_INFO("supervisor: started {}", options_.binary.string());
  return absl::OkStatus();
}

asio::awaitable<absl::Status> SupervisorLink::Sync() {
  auto alive = alive_;
  auto listed = co_await client_->List();
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!listed.ok())
    co_return listed.status();
  std::map<std::string, supervisor::TaskInfo> now;
  for (auto& t : *listed)
    now[t.task_id] = t;
  std::vector<supervisor::TaskInfo> exits;
  for (const auto& [id, before] : known_) {
    if (!before.running)
      continue;
    auto it = now.find(id);
    if (it == now.end()) {
      // The supervisor lost it (its state was removed): it cannot be waited for.
      supervisor::TaskInfo gone = before;
      gone.running = false;
      gone.exit = supervisor::ExitStatus{.unknown = true};
      now[id] = gone;
      exits.push_back(gone);
    } else if (!it->second.running) {
      exits.push_back(it->second);
    }
  }
  known_ = std::move(now);
  for (const auto& e : exits)
    OnExit(e);
  co_return absl::OkStatus();
}

void SupervisorLink::OnExit(const supervisor::TaskInfo& info) {
  ++stats_.exits;
  known_[info.task_id] = info;
  // Listeners may unsubscribe while we iterate.
  auto listeners = listeners_;
  for (auto& [token, listener] : listeners)
    listener(info);
}

void SupervisorLink::OnDisconnect() {
  if (closed_)
    return;
  health_ = absl::UnavailableError("lost the connection to the supervisor");
  DROVER_LOG_WARN("supervisor: connection lost; reconnecting");
  common::SpawnDetached(executor_, ReconnectLoop(), "supervisor reconnect");
}

asio::awaitable<void> SupervisorLink::ReconnectLoop() {
  auto alive = alive_;
  auto stop = stop_;
  auto delay = kReconnectMin;
  while (*alive && !stop->cancelled() && !connected()) {
    absl::Status s = co_await EnsureConnected();
    if (!*alive || s.ok())
      break;
    DROVER_LOG_WARN("supervisor: reconnect failed: {}; retrying in {} ms", s.ToString(),
                    delay.count());
    asio::steady_timer timer(executor_, delay);
    co_await (timer.async_wait(asio::use_awaitable) || stop->Wait());
    delay = std::min(delay * 2, kReconnectMax);
  }
  if (*alive && connected())
    DROVER_LOG_INFO("supervisor: reconnected (pid {})", supervisor_pid_);
}

asio::awaitable<absl::Status> SupervisorLink::Shutdown() {
  auto alive = alive_;
  if (!connected())
    co_return absl::FailedPreconditionError("not connected to the supervisor");
  client_->on_disconnect = nullptr;
  supervisor::Json request = {{"op", "shutdown"}};
  auto r = co_await client_->Call(std::move(request));
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!r.ok()) {
    if (client_)
      client_->on_disconnect = [this] { OnDisconnect(); };
    co_return r.status();
  }
  Close();
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> SupervisorLink::Ready() {
  auto alive = alive_;
  absl::Status s = co_await EnsureConnected();
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!s.ok())
    co_return absl::UnavailableError("supervisor unavailable: " + std::string(s.message()));
  co_return absl::OkStatus();
}

asio::awaitable<absl::StatusOr<std::optional<supervisor::TaskInfo>>> SupervisorLink::Lookup(
    std::string task_id) {
  auto alive = alive_;
  if (absl::Status s = co_await Ready(); !s.ok())
    co_return s;
  absl::Status synced = co_await Sync();
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!synced.ok())
    co_return absl::UnavailableError("supervisor unavailable: " + std::string(synced.message()));
  const supervisor::TaskInfo* info = Find(task_id);
  co_return info == nullptr ? std::nullopt : std::optional<supervisor::TaskInfo>(*info);
}

asio::awaitable<absl::StatusOr<supervisor::TaskInfo>> SupervisorLink::Spawn(
    const supervisor::SpawnSpec& spec) {
  auto alive = alive_;
  if (absl::Status s = co_await Ready(); !s.ok())
    co_return s;
  auto r = co_await client_->Spawn(spec);
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (!r.ok() && absl::IsUnavailable(r.status())) {
    // Sent, and the connection dropped: the supervisor may have started it.
    ++stats_.spawn_failures;
    absl::Status lost = r.status();
    lost.SetPayload(kSpawnSentPayload, absl::Cord("1"));
    co_return lost;
  }
  if (r.ok())
    known_.emplace(r->task_id, *r);  // an exit event may have come first: it stays
  ++(r.ok() ? stats_.spawns : stats_.spawn_failures);
  co_return r;
}

SupervisorLink::Stats SupervisorLink::stats() const {
  Stats out = stats_;
  out.tasks = known_.size();
  return out;
}

asio::awaitable<absl::Status> SupervisorLink::Signal(const std::string& task_id,
                                                     const std::string& signal, bool group) {
  auto alive = alive_;
  if (absl::Status s = co_await Ready(); !s.ok())
    co_return s;
  co_return co_await client_->Signal(task_id, signal, group);
}

asio::awaitable<absl::Status> SupervisorLink::AckExit(const std::string& task_id) {
  auto alive = alive_;
  if (absl::Status s = co_await Ready(); !s.ok())
    co_return s;
  absl::Status s = co_await client_->AckExit(task_id);
  if (!*alive)
    co_return absl::UnavailableError("the supervisor link is gone");
  if (s.ok())
    known_.erase(task_id);
  co_return s;
}

}  // namespace drover::drivers
