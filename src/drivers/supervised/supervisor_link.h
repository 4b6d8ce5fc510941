// The agent's one connection to its node's drover-supervisor (DESIGN.md §1, §6),
// shared by the drivers that run processes (raw_exec, exec).
//
// Start() connects to the supervisor listening in `dir`, or launches one (detached: its
// own session, not the agent's child, so it outlives the agent) and connects to it,
// and loads the list of tasks the supervisor holds so that drivers can re-attach
// (RecoverTask) without a round trip. When the connection is lost the link reconnects
// in the background, launching a new supervisor if the old one died (the new one
// adopts the running tasks); exits that happened meanwhile are delivered from the
// supervisor's list, and a task the supervisor no longer knows is reported as exited
// with an unknown status.
//
// Lives on the control loop; not thread-safe.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/async_semaphore.h"
#include "common/cancellation.h"
#include "supervisor/client.h"
#include "supervisor/protocol.h"

namespace drover::drivers {

struct SupervisorLinkOptions {
  std::filesystem::path binary;  // the drover-supervisor executable
  // drover-reaper, which runs the supervisor as its child and is the tasks' parent
  // (docs/supervisor.md); empty: the one next to `binary`.
  std::filesystem::path reaper;
  // Holds supervisor.sock, state/ (the task table) and supervisor.log; created 0700.
  std::filesystem::path dir;
  std::string log_level = "info";
  std::chrono::milliseconds start_timeout{10000};
};

// `drover-supervisor` next to the running executable.
std::filesystem::path DefaultSupervisorBinary();

// Set on Spawn's Unavailable error when the request reached the connection before it
// dropped: the supervisor may have started the task (SupervisedDriver adopts it).
inline constexpr char kSpawnSentPayload[] = "drover.dev/spawn-sent";

class SupervisorLink {
 public:
  SupervisorLink(asio::any_io_executor executor, SupervisorLinkOptions options);
  ~SupervisorLink();
  SupervisorLink(const SupervisorLink&) = delete;
  SupervisorLink& operator=(const SupervisorLink&) = delete;

  // Connects (launching the supervisor if none answers) and loads its task list.
  // Call once, before drivers recover tasks. The error is also kept in health().
  asio::awaitable<absl::Status> Start();
  // Asks the supervisor to exit; refused while it holds running tasks. For agents
  // that own their tasks (-dev) and for tests. The link then stays closed.
  asio::awaitable<absl::Status> Shutdown();
  // Drops the connection and stops reconnecting; supervisor and tasks stay.
  void Close();

  // OK while connected; otherwise why not.
  absl::Status health() const { return health_; }
  bool connected() const { return client_ != nullptr && client_->connected(); }
  // The supervisor's pid as it reported it (0 before the first connection).
  int supervisor_pid() const { return supervisor_pid_; }

  // For metrics: since the link started.
  struct Stats {
    uint64_t spawns = 0;          // tasks the supervisor started
    uint64_t spawn_failures = 0;  // spawns refused or not answered
    uint64_t exits = 0;           // exits delivered
    uint64_t connects = 0;        // connections made (the first, and each reconnection)
    size_t tasks = 0;             // tasks it holds now
  };
  Stats stats() const;

  // A task the supervisor holds (from Start's list, a spawn or an exit event), or null.
  const supervisor::TaskInfo* Find(const std::string& task_id) const;
  // Every task the supervisor holds, running or exited and not yet acknowledged.
  std::vector<std::string> TaskIds() const;

  // Unavailable when no supervisor can be reached; the supervisor's error otherwise.
  asio::awaitable<absl::StatusOr<supervisor::TaskInfo>> Spawn(const supervisor::SpawnSpec& spec);
  asio::awaitable<absl::Status> Signal(const std::string& task_id, const std::string& signal,
                                       bool group);
  // The exit is recorded by the agent: the supervisor (and this link) forget the task.
  asio::awaitable<absl::Status> AckExit(const std::string& task_id);
  // Asks the supervisor (reconnecting if needed) for its list again, and returns what it
  // holds under `task_id`: nullopt when it holds nothing. Unavailable while none answers.
  asio::awaitable<absl::StatusOr<std::optional<supervisor::TaskInfo>>> Lookup(std::string task_id);

  // The start slots of every driver sharing this link (Driver::start_slots): the
  // supervisor answers one spawn at a time, so more prepared starts than this only wait.
  common::AsyncSemaphore& start_slots() { return start_slots_; }
  static constexpr int kStartSlots = 32;

  // Every exit, once, to every listener (drivers pick their own task ids).
  using ExitListener = std::function<void(const supervisor::TaskInfo&)>;
  int Subscribe(ExitListener listener);
  void Unsubscribe(int token);

 private:
  asio::awaitable<absl::Status> EnsureConnected();
  // EnsureConnected for a call: Unavailable, saying why, unless connected. Safe to
  // return from when the link was destroyed meanwhile (it then touches nothing).
  asio::awaitable<absl::Status> Ready();
  asio::awaitable<absl::Status> ConnectOrLaunch();
  asio::awaitable<absl::Status> TryConnect();
  // Loads the supervisor's list, delivering exits the link has not seen.
  asio::awaitable<absl::Status> Sync();
  asio::awaitable<void> ReconnectLoop();
  absl::Status Launch();
  void OnExit(const supervisor::TaskInfo& info);
  void OnDisconnect();

  asio::any_io_executor executor_;
  SupervisorLinkOptions options_;
  std::unique_ptr<supervisor::Client> client_;
  // Clients replaced after a disconnect; their coroutines may still be unwinding.
  std::vector<std::unique_ptr<supervisor::Client>> retired_;
  std::map<std::string, supervisor::TaskInfo> known_;
  std::map<int, ExitListener> listeners_;
  int next_token_ = 1;
  absl::Status health_ = absl::UnavailableError("not started");
  int supervisor_pid_ = 0;
  Stats stats_;
  bool closed_ = false;
  bool connecting_ = false;
  std::shared_ptr<common::Event> connect_done_;
  common::CancellationScopePtr stop_;
  common::AsyncSemaphore start_slots_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace drover::drivers
