#include "supervisor/server.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/write.hpp>

#include "common/clock.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/signals.h"
#include "supervisor/process.h"

namespace drover::supervisor {

namespace fs = std::filesystem;
using asio::local::stream_protocol;

struct Server::Task {
  TaskInfo info;
  // Adopted from an earlier supervisor: not our child; watched through a pidfd.
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;
};

struct Server::Connection {
  explicit Connection(stream_protocol::socket s)
      : socket(std::move(s)), wake(socket.get_executor()) {}
  stream_protocol::socket socket;
  std::deque<std::string> outbox;
  common::Notifier wake;
  bool closed = false;
};

namespace {

int64_t NowNanos() {
  return common::ToUnixNanos(common::RealClock().Now());
}

Json Error(const Json& request, const std::string& message) {
  return {{"id", request.value("id", Json(nullptr))}, {"ok", false}, {"error", message}};
}

Json Ok(const Json& request) {
  return {{"id", request.value("id", Json(nullptr))}, {"ok", true}};
}

}  // namespace

Server::Server(asio::io_context& io, ServerConfig config)
    : io_(io), config_(std::move(config)), sigchld_(io, SIGCHLD) {}

Server::~Server() {
  Stop();
}

absl::Status Server::Start() {
  auto table = TaskTable::Open(config_.state_dir);
  if (!table.ok())
    return table.status();
  table_.emplace(std::move(*table));
  // Adopt what an earlier supervisor left running; settle what died meanwhile.
  for (const auto& [id, info] : table_->tasks()) {
    auto task = std::make_unique<Task>();
    task->info = info;
    if (info.running) {
      const int fd = info.start_ticks != 0 && ProcessStartTicks(info.pid) == info.start_ticks
                         ? PidfdOpen(info.pid)
                         : -1;
      if (fd >= 0) {
        task->pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
        DROVER_LOG_INFO("supervisor: adopted task {} (pid {})", id, info.pid);
      } else {
        task->info.running = false;
        task->info.exit = ExitStatus{.unknown = true, .time_ns = NowNanos()};
        if (absl::Status s = table_->Put(task->info); !s.ok())
          return s;
      }
    }
    tasks_[id] = std::move(task);
  }
  for (auto& [id, task] : tasks_) {
    if (task->pidfd)
      common::SpawnDetached(io_.get_executor(), WatchAdopted(id), "watch " + id);
  }
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
  common::SpawnDetached(io_.get_executor(), AcceptLoop(), "supervisor accept");
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
  for (const auto& conn : connections_) {
    conn->closed = true;
    conn->socket.close(ec);
    conn->wake.Notify();
  }
  connections_.clear();
  for (auto& [id, task] : tasks_) {
    if (task->pidfd)
      task->pidfd->close(ec);
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
      Send(conn, Handle(**msg));
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
      co_await conn->wake.Wait();
      continue;
    }
    const std::string frame = std::move(conn->outbox.front());
    conn->outbox.pop_front();
    auto [ec, n] = co_await asio::async_write(conn->socket, asio::buffer(frame),
                                              asio::as_tuple(asio::use_awaitable));
    if (ec)
      break;
  }
  boost::system::error_code ignored;
  conn->socket.close(ignored);
}

void Server::Send(const std::shared_ptr<Connection>& conn, const Json& message) {
  if (conn->closed)
    return;
  conn->outbox.push_back(EncodeFrame(message));
  conn->wake.Notify();
}

void Server::Broadcast(const Json& message) {
  for (const auto& conn : connections_)
    Send(conn, message);
}

Json Server::Handle(const Json& request) {
  const std::string op = request.value("op", "");
  try {
    if (op == "spawn")
      return Spawn(request);
    if (op == "signal")
      return SignalTask(request);
    if (op == "list") {
      Json r = List();
      r["id"] = request.value("id", Json(nullptr));
      return r;
    }
    if (op == "ack_exit")
      return AckExit(request);
  } catch (const std::exception& e) {
    return Error(request, std::string("bad request: ") + e.what());
  }
  return Error(request, "unknown op \"" + op + "\"");
}

Json Server::Spawn(const Json& request) {
  auto spec = SpawnSpecFromJson(request.value("spec", Json::object()));
  if (!spec.ok())
    return Error(request, std::string(spec.status().message()));
  if (tasks_.contains(spec->task_id))
    return Error(request, "task \"" + spec->task_id + "\" already exists");
  std::shared_ptr<FileRotator> out_rot, err_rot;
  if (!spec->logs.dir.empty()) {
    auto out = FileRotator::Open(spec->logs.dir, spec->logs.stdout_base, spec->logs.max_files,
                                 spec->logs.max_file_size);
    auto err = FileRotator::Open(spec->logs.dir, spec->logs.stderr_base, spec->logs.max_files,
                                 spec->logs.max_file_size);
    if (!out.ok() || !err.ok()) {
      return Error(request, "failed to open log files: " +
                                std::string((out.ok() ? err.status() : out.status()).message()));
    }
    out_rot = std::move(*out);
    err_rot = std::move(*err);
  }
  auto proc = SpawnProcess(*spec);
  if (!proc.ok())
    return Error(request, std::string(proc.status().message()));
  auto task = std::make_unique<Task>();
  task->info = TaskInfo{.task_id = spec->task_id,
                        .pid = proc->pid,
                        .start_ticks = proc->start_ticks,
                        .running = true};
  if (absl::Status s = table_->Put(task->info); !s.ok()) {
    // Without a record a later supervisor could not adopt it: refuse the task.
    kill(-proc->pid, SIGKILL);
    return Error(request, "failed to record task: " + std::string(s.message()));
  }
  pid_to_task_[proc->pid] = spec->task_id;
  if (proc->stdout_fd >= 0) {
    auto out = std::make_shared<asio::posix::stream_descriptor>(io_, proc->stdout_fd);
    auto err = std::make_shared<asio::posix::stream_descriptor>(io_, proc->stderr_fd);
    common::SpawnDetached(io_.get_executor(), PumpLog(out, out_rot), "stdout of " + spec->task_id);
    common::SpawnDetached(io_.get_executor(), PumpLog(err, err_rot), "stderr of " + spec->task_id);
  }
  Json r = Ok(request);
  r["task"] = ToJson(task->info);
  tasks_[spec->task_id] = std::move(task);
  return r;
}

Json Server::SignalTask(const Json& request) {
  const std::string id = request.value("task_id", "");
  auto it = tasks_.find(id);
  if (it == tasks_.end())
    return Error(request, "unknown task \"" + id + "\"");
  const TaskInfo& info = it->second->info;
  if (!info.running)
    return Error(request, "task \"" + id + "\" is not running");
  auto sig = common::ParseSignal(request.value("signal", "SIGINT"));
  if (!sig.ok())
    return Error(request, std::string(sig.status().message()));
  // The whole process group (the task's session) unless asked for the process alone.
  const pid_t target = request.value("group", true) ? -info.pid : info.pid;
  if (kill(target, *sig) != 0 && errno != ESRCH)
    return Error(request, std::string("kill: ") + std::strerror(errno));
  return Ok(request);
}

Json Server::List() {
  Json tasks = Json::array();
  for (const auto& [id, task] : tasks_)
    tasks.push_back(ToJson(task->info));
  return {{"ok", true}, {"tasks", tasks}};
}

Json Server::AckExit(const Json& request) {
  const std::string id = request.value("task_id", "");
  auto it = tasks_.find(id);
  if (it == tasks_.end())
    return Ok(request);  // already forgotten: acks are idempotent
  if (it->second->info.running)
    return Error(request, "task \"" + id + "\" is still running");
  if (absl::Status s = table_->Remove(id); !s.ok())
    return Error(request, std::string(s.message()));
  tasks_.erase(it);
  return Ok(request);
}

asio::awaitable<void> Server::ReapLoop() {
  while (!stopped_) {
    auto [ec, sig] = co_await sigchld_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec)
      break;
    Reap();
  }
}

void Server::Reap() {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0)
      break;
    auto it = pid_to_task_.find(pid);
    if (it == pid_to_task_.end())
      continue;  // an orphaned grandchild re-parented to us: reaped, nothing to report
    const std::string id = it->second;
    pid_to_task_.erase(it);
    ExitStatus exit;
    exit.time_ns = NowNanos();
    if (WIFEXITED(status)) {
      exit.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      exit.signal = WTERMSIG(status);
    }
    RecordExit(id, exit);
  }
}

asio::awaitable<void> Server::WatchAdopted(std::string task_id) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end() || !it->second->pidfd)
    co_return;
  auto [ec] = co_await it->second->pidfd->async_wait(asio::posix::descriptor_base::wait_read,
                                                     asio::as_tuple(asio::use_awaitable));
  if (ec || stopped_)
    co_return;
  RecordExit(task_id, ExitStatus{.unknown = true, .time_ns = NowNanos()});
}

void Server::RecordExit(const std::string& task_id, ExitStatus exit) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end())
    return;
  Task& task = *it->second;
  task.info.running = false;
  task.info.exit = exit;
  task.pidfd.reset();
  if (absl::Status s = table_->Put(task.info); !s.ok()) {
    DROVER_LOG_ERROR("supervisor: failed to record exit of {}: {}", task_id, s.ToString());
  }
  Broadcast({{"event", "exited"}, {"task", ToJson(task.info)}});
}

asio::awaitable<void> Server::PumpLog(std::shared_ptr<asio::posix::stream_descriptor> pipe,
                                      std::shared_ptr<FileRotator> rotator) {
  // Reads until every writer (the task and anything it forked) has closed the pipe.
  // Appending to the log file is a short, buffered write: done inline, as this
  // process has nothing else that could wait behind it for long.
  std::array<char, 65536> buf{};
  for (;;) {
    auto [ec, n] =
        co_await pipe->async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (n > 0) {
      if (absl::Status s = rotator->Write(std::string_view(buf.data(), n)); !s.ok())
        DROVER_LOG_WARN("supervisor: log write: {}", s.ToString());
    }
    if (ec)
      break;
  }
  (void)rotator->Close();
}

}  // namespace drover::supervisor
