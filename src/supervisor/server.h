// The drover-supervisor: holds every task process of the node (DESIGN.md §1, §6).
//
// One thread, one io_context: it accepts agent connections on a unix socket, spawns
// tasks on request, reaps them (it is the children's subreaper, so orphaned
// grandchildren are reaped too), pumps each task's stdout/stderr FIFO into rotated log
// files, records exits in its task table until the agent acknowledges them, and pushes
// an "exited" event to every connection. It keeps no other state. Output the task
// wrote before it exited is in the log files before its exit is reported.
//
// Stop() (or the process exiting) leaves tasks running. A new Server over the same
// state dir adopts the tasks still alive by pid and start time.
//
// Under drover-reaper (ServerConfig::journal, the way the agent runs it) the tasks are
// the reaper's children, not the server's: it journals every exit before collecting it,
// and the server learns exits from the journal (inotify), its own tasks' and those of
// tasks an earlier server left, even exits that happened while no server ran. Only a
// task whose reaper died too (its parent is then init) has its exit reported with
// `unknown` set and no code. A server whose reaper is gone asks to exit: tasks it would
// start then could not be journaled. Without a reaper (tests that run the server
// in-process) the server is the tasks' parent and subreaper; the exits of tasks it
// adopts are then unknown.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/event.h"
#include "supervisor/exit_journal.h"
#include "supervisor/file_rotator.h"
#include "supervisor/protocol.h"
#include "supervisor/task_table.h"

namespace drover::supervisor {

struct ServerConfig {
  std::filesystem::path socket_path;
  std::filesystem::path state_dir;
  // How often the server checks that its socket file is still the one it bound. When
  // it is gone or replaced (its data dir was removed, or another supervisor took
  // over), nobody can reach this server any more: it asks to exit (on_exit_requested).
  std::chrono::milliseconds socket_check_interval{2000};
  // Where task cgroups go; detected from /proc/self/mountinfo when unset.
  std::optional<CgroupLayout> cgroups;
  // The exit journal of the drover-reaper that is this process's parent; empty: no
  // reaper (see above).
  std::filesystem::path journal;
};

class Server {
 public:
  Server(asio::io_context& io, ServerConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the task table, adopts tasks still running, and listens (socket 0600).
  absl::Status Start();
  // Stops listening and closes every connection; tasks keep running. Idempotent.
  // Destroy the server only after the io_context has run the completions this causes.
  void Stop();

  size_t num_tasks() const { return tasks_.size(); }

  // Called on the io thread when the server wants its process to exit: after a
  // `shutdown` request was answered, or when its socket file is gone or replaced. The
  // server has already stopped (tasks keep running).
  std::function<void()> on_exit_requested;

 private:
  struct Task;
  struct Connection;
  struct LogPump;
  struct LogTarget;

  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> ReadLoop(std::shared_ptr<Connection> conn);
  asio::awaitable<void> WriteLoop(std::shared_ptr<Connection> conn);
  asio::awaitable<void> ReapLoop();
  asio::awaitable<void> WatchAdopted(std::string task_id);
  // Loads what an earlier supervisor left in the table: adopts what still runs, settles
  // what ended meanwhile (from the journal, else as unknown).
  absl::Status AdoptTasks();
  // Under a reaper: checks that it is our parent and starts following its journal.
  absl::Status AttachReaper();
  asio::awaitable<void> WatchJournal();
  asio::awaitable<void> WatchReaper();
  // Reports the exits the journal holds for our tasks (and retries soon when a reaper
  // was writing). `wait`: take the lock even if a reaper holds it (at start).
  void ReadJournal(bool wait = false);
  // Pumps one output stream until every writer has closed its FIFO.
  static void PumpLog(std::shared_ptr<LogPump> pump);
  asio::awaitable<void> WatchSocket();
  // Names the FIFOs of a task's output (none without logs), unless it has them.
  void AssignFifos(TaskInfo& info) const;
  // Opens the rotated files and FIFOs of `info`'s output (AssignFifos named them) and
  // starts pumping them into `task`. `write_fds` (optional) receives write ends for a
  // task about to be spawned.
  absl::Status StartLogs(const TaskInfo& info, Task& task, std::pair<int, int>* write_fds);
  void RequestExit();
  // Kills what is left in a finished task's cgroup and removes it (retried while busy).
  asio::awaitable<void> RemoveCgroup(std::string name);

  Json Handle(const Json& request, const std::shared_ptr<Connection>& conn);
  Json Spawn(const Json& request);
  Json SignalTask(const Json& request);
  Json List();
  Json AckExit(const Json& request);
  Json Shutdown(const Json& request, const std::shared_ptr<Connection>& conn);

  void Reap();
  // Records an exit (persisted) and pushes the event.
  void RecordExit(const std::string& task_id, ExitStatus exit);
  void Send(const std::shared_ptr<Connection>& conn, const Json& message);
  void Broadcast(const Json& message);

  asio::io_context& io_;
  ServerConfig config_;
  std::optional<TaskTable> table_;
  std::unique_ptr<asio::local::stream_protocol::acceptor> acceptor_;
  asio::signal_set sigchld_;
  std::map<std::string, std::unique_ptr<Task>> tasks_;
  // Running tasks whose exit we can learn: our children (no reaper), or every task
  // spawned or adopted under a reaper that journals.
  std::map<int, std::string> pid_to_task_;
  std::unique_ptr<JournalReader> journal_;
  std::unique_ptr<asio::posix::stream_descriptor> journal_watch_;  // inotify
  std::unique_ptr<asio::posix::stream_descriptor> reaper_pidfd_;
  asio::steady_timer journal_retry_;
  pid_t reaper_pid_ = 0;
  bool journal_retry_pending_ = false;
  bool unsaved_exit_ = false;  // the last exit could not be written to the task table
  CgroupLayout cgroups_;
  std::set<std::shared_ptr<Connection>> connections_;
  ino_t socket_inode_ = 0;
  asio::steady_timer socket_timer_;
  bool stopped_ = false;
};

}  // namespace drover::supervisor
