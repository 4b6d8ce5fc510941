#include "supervisor/server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <boost/asio/write.hpp>

#include "common/clock.h"
#include "common/fds.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/signals.h"
#include "supervisor/process.h"
#include "supervisor/server_internal.h"

namespace drover::supervisor {

namespace fs = std::filesystem;
using asio::local::stream_protocol;

struct Server::Connection {
  explicit Connection(stream_protocol::socket s)
      : socket(std::move(s)), wake(socket.get_executor()) {}
  stream_protocol::socket socket;
  std::deque<std::string> outbox;
  size_t outbox_bytes = 0;
  common::Notifier wake;
  bool closed = false;
  bool exit_after_flush = false;  // a `shutdown` was answered on this connection
};

namespace {

// What may wait to be sent on one connection before it is dropped.
constexpr size_t kMaxOutboxBytes = size_t{64} << 20;

// Opens (creating it if needed) the FIFO a task stream is written into; returns the
// non-blocking read end, and in `*write_fd` a write end when asked for one. The FIFOs
// live in the supervisor's own 0700 dir; O_NOFOLLOW and the type check all the same.
absl::StatusOr<int> OpenFifo(const std::string& path, int* write_fd) {
  if (mkfifo(path.c_str(), 0600) != 0 && errno != EEXIST)
    return absl::InternalError("mkfifo '" + path + "': " + std::strerror(errno));
  const int rd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (rd < 0)
    return absl::InternalError("open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(rd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    close(rd);
    return absl::FailedPreconditionError("'" + path + "' is not a FIFO");
  }
  if (write_fd != nullptr) {
    *write_fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (*write_fd < 0) {
      const int e = errno;
      close(rd);
      return absl::InternalError("open '" + path + "' for writing: " + std::strerror(e));
    }
  }
  return rd;
}

// The request's id, echoed in the answer when it is one (a number or a string).
Json IdOf(const Json& request) {
  const auto it = request.find("id");
  if (it == request.end() || !(it->is_number() || it->is_string()))
    return nullptr;
  return *it;
}

Json Error(const Json& request, const std::string& message) {
  return {{"id", IdOf(request)}, {"ok", false}, {"error", message}};
}

Json Ok(const Json& request) {
  return {{"id", IdOf(request)}, {"ok", true}};
}

// Creates `cgroup` and opens its procs files into `fds`, through which the child joins
// it. On failure nothing is left: no descriptor, no cgroup.
absl::Status CreateJoinable(TaskCgroup& cgroup, const CgroupLimits& limits, std::vector<int>& fds) {
  if (absl::Status s = cgroup.Create(limits); !s.ok())
    return absl::Status(s.code(), "failed to create cgroup: " + std::string(s.message()));
  for (const fs::path& procs : cgroup.ProcsFiles()) {
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const std::string msg = "failed to open " + procs.string() + ": " + std::strerror(errno);
      for (int f : fds)
        close(f);
      fds.clear();
      (void)cgroup.Remove();
      return absl::InternalError(msg);
    }
    fds.push_back(fd);
  }
  return absl::OkStatus();
}

}  // namespace

Server::Server(asio::io_context& io, ServerConfig config)
    : io_(io),
      config_(std::move(config)),
      sigchld_(io, SIGCHLD),
      journal_retry_(io),
      socket_timer_(io) {}

Server::~Server() {
  Stop();
}

absl::Status Server::Start() {
  ReserveSpawnSlots();  // before the adopted tasks' descriptors take the low numbers
  auto table = TaskTable::Open(config_.state_dir);
  if (!table.ok())
    return table.status();
  table_.emplace(std::move(*table));
  cgroups_ = config_.cgroups ? *config_.cgroups : CgroupLayout::Detect();
  {
    std::error_code ec;
    fs::create_directories(config_.state_dir / "fifos", ec);
    fs::permissions(config_.state_dir / "fifos", fs::perms::owner_all, ec);
    if (ec) {
      return absl::InternalError("failed to create '" + (config_.state_dir / "fifos").string() +
                                 "': " + ec.message());
    }
  }
  if (!config_.journal.empty()) {
    if (absl::Status s = AttachReaper(); !s.ok())
      return s;
  }
  if (absl::Status s = AdoptTasks(); !s.ok())
    return s;
  std::error_code fs_ec;
  fs::remove(config_.socket_path, fs_ec);
  const mode_t old = umask(0177);  // the socket is the supervisor's door: owner only
  try {
    acceptor_ = std::make_unique<stream_protocol::acceptor>(
        io_, stream_protocol::endpoint(config_.socket_path.string()));
  } catch (const std::exception& e) {
    umask(old);
    return absl::UnavailableError("failed to listen on '" + config_.socket_path.string() +
                                  "': " + e.what());
  }
  umask(old);
  common::SetCloseOnExec(acceptor_->native_handle());
  struct stat st {};
  if (stat(config_.socket_path.c_str(), &st) == 0)
    socket_inode_ = st.st_ino;
  {
    std::ofstream pid_file(config_.state_dir / "supervisor.pid", std::ios::trunc);
    pid_file << getpid() << "\n";
  }
  common::SpawnDetached(io_.get_executor(), AcceptLoop(), "supervisor accept");
  common::SpawnDetached(io_.get_executor(), WatchSocket(), "supervisor socket watch");
  common::SpawnDetached(io_.get_executor(), ReapLoop(), "supervisor reaper");
  Reap();  // children may have exited before the handler was installed
  return absl::OkStatus();
}

void Server::Stop() {
  if (stopped_)
    return;
  stopped_ = true;
  boost::system::error_code ec;
  if (acceptor_) {
    acceptor_->close(ec);
    std::error_code fs_ec;
    fs::remove(config_.socket_path, fs_ec);
  }
  sigchld_.cancel(ec);
  socket_timer_.cancel();
  journal_retry_.cancel();
  if (journal_watch_)
    journal_watch_->close(ec);
  if (reaper_pidfd_)
    reaper_pidfd_->close(ec);
  for (const auto& conn : connections_) {
    conn->closed = true;
    conn->socket.close(ec);
    conn->wake.Notify();
  }
  connections_.clear();
  for (auto& [id, task] : tasks_) {
    if (task->pidfd)
      task->pidfd->close(ec);
    for (auto& pump : task->pumps) {
      if (!pump->eof)
        pump->Finish();
    }
  }
}

void Server::RequestExit() {
  Stop();
  if (on_exit_requested)
    on_exit_requested();
}

asio::awaitable<void> Server::WatchSocket() {
  while (!stopped_) {
    socket_timer_.expires_after(config_.socket_check_interval);
    auto [ec] = co_await socket_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || stopped_)
      co_return;
    struct stat st {};
    if (stat(config_.socket_path.c_str(), &st) != 0 || st.st_ino != socket_inode_) {
      DROVER_LOG_WARN("supervisor: socket {} is gone or replaced; exiting (tasks keep running)",
                      config_.socket_path.string());
      // Not ours any more: leave the file (another supervisor's) alone.
      acceptor_.reset();
      RequestExit();
      co_return;
    }
  }
}

asio::awaitable<void> Server::AcceptLoop() {
  while (!stopped_) {
    auto [ec, socket] = co_await acceptor_->async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (ec == asio::error::operation_aborted || stopped_)
        break;
      DROVER_LOG_WARN("supervisor: accept: {}", ec.message());
      continue;
    }
    common::SetCloseOnExec(socket.native_handle());
    auto conn = std::make_shared<Connection>(std::move(socket));
    connections_.insert(conn);
    common::SpawnDetached(io_.get_executor(), ReadLoop(conn), "supervisor connection");
    common::SpawnDetached(io_.get_executor(), WriteLoop(conn), "supervisor connection writer");
  }
}

asio::awaitable<void> Server::ReadLoop(std::shared_ptr<Connection> conn) {
  FrameDecoder decoder;
  std::array<char, 16384> buf{};
  while (!conn->closed) {
    auto [ec, n] = co_await conn->socket.async_read_some(asio::buffer(buf),
                                                         asio::as_tuple(asio::use_awaitable));
    if (ec)
      break;
    decoder.Append(std::string_view(buf.data(), n));
    bool bad = false;
    for (;;) {
      auto msg = decoder.Next();
      if (!msg.ok()) {
        // One bad client must not take the supervisor down: drop only this connection.
        DROVER_LOG_WARN("supervisor: closing connection: {}", msg.status().ToString());
        bad = true;
        break;
      }
      if (!*msg)
        break;
      // After an accepted shutdown nothing more is done: a spawn now would outlive us.
      Send(conn, conn->exit_after_flush ? Error(**msg, "the supervisor is shutting down")
                                        : Handle(**msg, conn));
      // The answer goes out now, not after every request already read: a peer that
      // pipelines its spawns then gets each answer as soon as it is ready, rather than
      // all of them together (and then sends the next ones together).
      co_await asio::post(io_.get_executor(), asio::use_awaitable);
      if (conn->closed)
        break;
    }
    if (bad)
      break;
  }
  conn->closed = true;
  conn->wake.Notify();
  connections_.erase(conn);
}

asio::awaitable<void> Server::WriteLoop(std::shared_ptr<Connection> conn) {
  while (!conn->closed) {
    if (conn->outbox.empty()) {
      if (conn->exit_after_flush) {
        RequestExit();
        break;
      }
      co_await conn->wake.Wait();
      continue;
    }
    const std::string frame = std::move(conn->outbox.front());
    conn->outbox.pop_front();
    conn->outbox_bytes -= frame.size();
    auto [ec, n] = co_await asio::async_write(conn->socket, asio::buffer(frame),
                                              asio::as_tuple(asio::use_awaitable));
    if (ec)
      break;
  }
  // Nothing more can be answered: the read loop stops at its next request too.
  conn->closed = true;
  boost::system::error_code ignored;
  conn->socket.close(ignored);
}

void Server::Send(const std::shared_ptr<Connection>& conn, const Json& message) {
  if (conn->closed)
    return;
  std::string frame = EncodeFrame(message);
  if (conn->outbox_bytes + frame.size() > kMaxOutboxBytes) {
    // A peer that does not read its answers does not get to grow our memory.
    DROVER_LOG_WARN("supervisor: closing a connection that stopped reading");
    conn->closed = true;
    boost::system::error_code ignored;
    conn->socket.close(ignored);
    conn->wake.Notify();
    return;
  }
  conn->outbox_bytes += frame.size();
  conn->outbox.push_back(std::move(frame));
  conn->wake.Notify();
}

void Server::Broadcast(const Json& message) {
  for (const auto& conn : connections_)
    Send(conn, message);
}

Json Server::Handle(const Json& request, const std::shared_ptr<Connection>& conn) {
  // Whatever a peer sends, of any type, is answered: nothing may escape this function.
  const auto op_it = request.find("op");
  if (op_it == request.end() || !op_it->is_string())
    return Error(request, "bad request: \"op\" must be a string");
  const std::string& op = op_it->get_ref<const std::string&>();
  try {
    if (op == "spawn")
      return Spawn(request);
    if (op == "signal")
      return SignalTask(request);
    if (op == "list") {
      Json r = List();
      r["id"] = IdOf(request);
      return r;
    }
    if (op == "ack_exit")
      return AckExit(request);
    if (op == "info") {
      Json r = Ok(request);
      r["pid"] = getpid();
      r["tasks"] = tasks_.size();
      return r;
    }
    if (op == "shutdown")
      return Shutdown(request, conn);
  } catch (const std::exception& e) {
    return Error(request, std::string("bad request: ") + e.what());
  }
  return Error(request, "unknown op \"" + op.substr(0, 64) + "\"");
}

void Server::AssignFifos(TaskInfo& info) const {
  if (info.logs.dir.empty() || !info.stdout_fifo.empty())
    return;
  const std::string base = (config_.state_dir / "fifos" / CgroupName(info.task_id)).string();
  info.stdout_fifo = base + ".stdout";
  info.stderr_fifo = base + ".stderr";
}

absl::Status Server::StartLogs(const TaskInfo& info, Task& task, std::pair<int, int>* write_fds) {
  const LogSpec& logs = info.logs;
  if (logs.dir.empty())
    return absl::OkStatus();
  if (info.stdout_fifo.empty() || info.stderr_fifo.empty())
    return absl::InternalError("task " + info.task_id + " has logs but no FIFOs");
  std::vector<std::shared_ptr<LogPump>> pumps;
  int writers[2] = {-1, -1};
  const std::string bases[2] = {logs.stdout_base, logs.stderr_base};
  const std::string fifos[2] = {info.stdout_fifo, info.stderr_fifo};
  auto dir = FileRotator::OpenDir(logs.dir);
  if (!dir.ok())
    return dir.status();
  const auto target = std::make_shared<const LogTarget>(LogTarget{common::UniqueFd(*dir), logs});
  absl::Status status;
  for (int i = 0; i < 2 && status.ok(); ++i) {
    // Creates the current file now; the pump reopens it at the first output.
    auto rotator = FileRotator::OpenAt(target->dir.get(), logs.dir, bases[i], logs.max_files,
                                       logs.max_file_size);
    if (!rotator.ok()) {
      status = rotator.status();
      break;
    }
    if (absl::Status s = (*rotator)->Close(); !s.ok()) {
      status = s;
      break;
    }
    auto fd = OpenFifo(fifos[i], write_fds != nullptr ? &writers[i] : nullptr);
    if (!fd.ok()) {
      status = fd.status();
      break;
    }
    pumps.push_back(std::make_shared<LogPump>(io_, *fd, target, /*is_stderr=*/i == 1));
  }
  if (!status.ok()) {
    for (int fd : writers) {
      if (fd >= 0)
        close(fd);
    }
    for (auto& pump : pumps)
      pump->Finish();
    return status;
  }
  for (auto& pump : pumps)
    PumpLog(pump);
  task.pumps = std::move(pumps);
  if (write_fds != nullptr)
    *write_fds = {writers[0], writers[1]};
  return absl::OkStatus();
}

Json Server::Spawn(const Json& request) {
  auto spec = SpawnSpecFromJson(request.value("spec", Json::object()));
  if (!spec.ok())
    return Error(request, std::string(spec.status().message()));
  if (tasks_.contains(spec->task_id))
    return Error(request, "task \"" + spec->task_id + "\" already exists");
  auto task = std::make_unique<Task>();
  // Put into the table (and referred to by the task) once the process exists.
  TaskInfo info{
      .task_id = spec->task_id, .running = true, .logs = spec->logs, .cgroup = spec->cgroup.name};
  AssignFifos(info);
  std::vector<int> cgroup_fds;
  std::optional<TaskCgroup> cgroup;
  if (!spec->cgroup.name.empty()) {
    cgroup.emplace(cgroups_, spec->cgroup.name);
    if (absl::Status s = CreateJoinable(*cgroup, spec->cgroup.limits, cgroup_fds); !s.ok())
      return Error(request, std::string(s.message()));
  }
  std::pair<int, int> writers{-1, -1};
  absl::Status logs = StartLogs(info, *task, &writers);
  absl::StatusOr<SpawnedProcess> proc = absl::InternalError("not started");
  // Recorded before it may run: a later supervisor adopts it whenever this one dies.
  // Without a record the child exits without running the task.
  bool reaper_gone = false;
  auto record = [&](const SpawnedProcess& p) -> absl::Status {
    // Under a reaper the child is the reaper's (CLONE_PARENT): if we were orphaned
    // meanwhile, it is init's, and its exit could not be known. It must not run.
    if (journal_ && p.parent != reaper_pid_) {
      reaper_gone = true;
      return absl::UnavailableError("drover-reaper is gone");
    }
    info.pid = p.pid;
    info.start_ticks = p.start_ticks;
    absl::Status s = table_->Put(info);
    task->info = table_->Find(info.task_id);  // there even if persisting it failed
    if (!s.ok())
      return absl::InternalError("failed to record task: " + std::string(s.message()));
    return absl::OkStatus();
  };
  if (logs.ok()) {
    proc = SpawnProcess(*spec, writers.first, writers.second, cgroup_fds,
                        /*parent_reaps=*/journal_ != nullptr, record);
  }
  // The task holds its own write ends now: ours would keep the FIFOs from ever
  // reaching end of file.
  for (int fd : {writers.first, writers.second}) {
    if (fd >= 0)
      close(fd);
  }
  for (int fd : cgroup_fds)
    close(fd);
  if (!logs.ok() || !proc.ok()) {
    for (auto& pump : task->pumps)
      pump->Finish();
    if (cgroup)
      (void)cgroup->Remove();
    if (info.pid != 0)
      (void)table_->Remove(info.task_id);  // recorded, then it failed to exec
    if (reaper_gone) {
      // No answer: the agent sees the connection drop, and asks the next supervisor
      // whether the task exists (it does not) before it tries again.
      DROVER_LOG_ERROR("supervisor: drover-reaper is gone; exiting (tasks keep running)");
      RequestExit();
      return Error(request, "drover-reaper is gone");
    }
    if (!logs.ok())
      return Error(request, "failed to set up log files: " + std::string(logs.message()));
    return Error(request, std::string(proc.status().message()));
  }
  pid_to_task_[proc->pid] = spec->task_id;
  Json r = Ok(request);
  r["task"] = ToJson(*task->info);
  tasks_[spec->task_id] = std::move(task);
  return r;
}

Json Server::Shutdown(const Json& request, const std::shared_ptr<Connection>& conn) {
  size_t running = 0;
  for (const auto& [id, task] : tasks_)
    running += task->info->running ? 1 : 0;
  if (running > 0) {
    return Error(request,
                 "refusing to exit: " + std::to_string(running) + " task(s) still running");
  }
  conn->exit_after_flush = true;  // once this answer is written
  return Ok(request);
}

Json Server::SignalTask(const Json& request) {
  const std::string id = request.value("task_id", "");
  auto it = tasks_.find(id);
  if (it == tasks_.end())
    return Error(request, "unknown task \"" + id + "\"");
  const TaskInfo& info = *it->second->info;
  auto sig = common::ParseSignal(request.value("signal", "SIGINT"));
  if (!sig.ok())
    return Error(request, std::string(sig.status().message()));
  const bool group = request.value("group", true);
  if (!info.running) {
    if (!group)
      return Error(request, "task \"" + id + "\" is not running");
    // What the task left behind in its group (until the exit is acknowledged). Only
    // while no process has the leader's pid: a live process with it is not ours (the
    // pid was reused), and may lead a group of its own.
    if (ProcessStartTicks(info.pid) == 0 && kill(-info.pid, *sig) != 0 && errno != ESRCH)
      return Error(request, std::string("kill: ") + std::strerror(errno));
    if (!info.cgroup.empty() && *sig == SIGKILL)
      TaskCgroup(cgroups_, info.cgroup).KillAll();
    return Ok(request);
  }
  // The whole process group (the task's session) unless asked for the process alone.
  // Under a reaper an exited task is collected as soon as its exit is journaled, maybe
  // before we read that: its pid may be another process's by now. Signal it only while
  // the pid still names it; its exit is on its way otherwise.
  if (journal_ && ProcessStartTicks(info.pid) != info.start_ticks) {
    ReadJournal();
    return Ok(request);
  }
  const pid_t target = group ? -info.pid : info.pid;
  if (kill(target, *sig) != 0 && errno != ESRCH)
    return Error(request, std::string("kill: ") + std::strerror(errno));
  // A cgroup holds everything the task started, whatever process group it moved to.
  if (group && !info.cgroup.empty() && *sig == SIGKILL)
    TaskCgroup(cgroups_, info.cgroup).KillAll();
  return Ok(request);
}

Json Server::List() {
  Json tasks = Json::array();
  for (const auto& [id, task] : tasks_)
    tasks.push_back(ToJson(*task->info));
  return {{"ok", true}, {"tasks", tasks}};
}

Json Server::AckExit(const Json& request) {
  const std::string id = request.value("task_id", "");
  auto it = tasks_.find(id);
  if (it == tasks_.end())
    return Ok(request);  // already forgotten: acks are idempotent
  if (it->second->info->running)
    return Error(request, "task \"" + id + "\" is still running");
  const TaskInfo info = *it->second->info;
  // Pumps still reading (a grandchild's output) keep their descriptors.
  tasks_.erase(it);
  // The table forgets the task even when persisting that fails (the error is the
  // answer; a later supervisor may report the exit again, and its ack settles it).
  const absl::Status removed = table_->Remove(id);
  if (!info.cgroup.empty()) {
    common::SpawnDetached(io_.get_executor(), RemoveCgroup(info.cgroup), "remove cgroup of " + id);
  }
  for (const std::string& fifo : {info.stdout_fifo, info.stderr_fifo}) {
    if (!fifo.empty())
      unlink(fifo.c_str());
  }
  if (!removed.ok())
    return Error(request, std::string(removed.message()));
  return Ok(request);
}

// Pumps one output stream until every writer (the task and anything it forked) has
// closed its FIFO. A chain of waits, not a coroutine: one pending wait holds about
// 150 bytes, a suspended coroutine about 600, and a node holds two per task. Appending
// to the log file is a short write, done inline: this process has nothing else that
// could wait behind it for long.
void Server::PumpLog(std::shared_ptr<LogPump> pump) {
  LogPump& p = *pump;
  p.fifo.async_wait(asio::posix::descriptor_base::wait_read,
                    [pump = std::move(pump)](const boost::system::error_code& ec) mutable {
                      if (ec || pump->eof)
                        return;
                      pump->Drain(kDrainBytes);
                      if (!pump->eof)
                        PumpLog(std::move(pump));
                    });
}

}  // namespace drover::supervisor
