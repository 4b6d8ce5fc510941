// The supervisor's exits (server.h): adopting what an earlier supervisor left, reaping
// its own children, reading the reaper's journal, and recording each exit.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/logging.h"
#include "common/offload.h"
#include "supervisor/cgroups.h"
#include "supervisor/process.h"
#include "supervisor/server_internal.h"

namespace drover::supervisor {

namespace {
// The journal is emptied once read and at least this large.
constexpr size_t kJournalKeepBytes = 256 << 10;
}  // namespace

absl::Status Server::AdoptTasks() {
  // Adopt what an earlier supervisor left running; settle what died meanwhile: from
  // the journal when a reaper saw it, else as unknown.
  for (const auto& [id, record] : table_->tasks()) {
    auto task = std::make_unique<Task>();
    task->info = &record;
    const TaskInfo& info = record;
    if (info.running) {
      // Output the task wrote (before it exited, or while nobody read) is still in
      // its FIFOs. A record without their names gets them (Put replaces it in place).
      TaskInfo named = info;
      AssignFifos(named);
      if (named.stdout_fifo != info.stdout_fifo) {
        if (absl::Status s = table_->Put(named); !s.ok())
          DROVER_LOG_WARN("supervisor: task {}: {}", id, s.ToString());
      }
      if (absl::Status s = StartLogs(info, *task, nullptr); !s.ok())
        DROVER_LOG_WARN("supervisor: output of task {} is lost: {}", id, s.ToString());
      if (journal_)
        pid_to_task_[info.pid] = id;
    }
    tasks_[id] = std::move(task);
  }
  // Watch what still runs first, then read the journal: a task that ends in between is
  // in the journal by then (the reaper writes before it collects), not taken for lost.
  for (auto& [id, task] : tasks_) {
    const TaskInfo& info = *task->info;
    if (!info.running)
      continue;
    // The pidfd first, then the identity check: a pid reused in between would
    // otherwise be watched as ours.
    int fd = info.start_ticks != 0 ? PidfdOpen(info.pid) : -1;
    if (fd >= 0 && ProcessStartTicks(info.pid) != info.start_ticks) {
      close(fd);
      fd = -1;
    }
    if (fd < 0)
      continue;
    task->pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    // Journaled when a reaper holds it; one already collected may have been the reaper's.
    task->journaled = journal_ && (ReaperOf(info.pid) || ParentOf(info.pid) == 0);
    DROVER_LOG_INFO("supervisor: adopted task {} (pid {}{})", id, info.pid,
                    task->journaled ? ", exit journaled" : "");
  }
  if (journal_) {
    do {
      ReadJournal(/*wait=*/true);  // all of it, before anything is called lost
    } while (journal_->more());
  }
  for (auto& [id, task] : tasks_) {
    if (!task->info->running || task->pidfd)
      continue;
    pid_to_task_.erase(task->info->pid);
    TaskInfo lost = *task->info;
    lost.running = false;
    lost.exit = ExitStatus{.unknown = true, .time_ns = NowNanos()};
    for (auto& pump : task->pumps)
      pump->Drain(kExitDrainBytes);
    if (absl::Status s = table_->Put(lost); !s.ok())
      return s;
  }
  for (auto& [id, task] : tasks_) {
    if (task->pidfd)
      common::SpawnDetached(io_.get_executor(), WatchAdopted(id), "watch " + id);
  }
  return absl::OkStatus();
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
  const int pid = it->second->info->pid;
  auto [ec] = co_await it->second->pidfd->async_wait(asio::posix::descriptor_base::wait_read,
                                                     asio::as_tuple(asio::use_awaitable));
  if (ec || stopped_)
    co_return;
  it = tasks_.find(task_id);
  if (it == tasks_.end() || !it->second->info->running)
    co_return;
  // A task under a live reaper has its exit journaled (any moment now); one whose
  // reaper died with an earlier supervisor is init's child, and its code is lost.
  if (it->second->journaled) {
    asio::steady_timer grace(io_);
    for (int i = 0; i < 100 && !stopped_; ++i) {
      ReadJournal();
      it = tasks_.find(task_id);
      if (it == tasks_.end() || !it->second->info->running)
        co_return;
      grace.expires_after(std::chrono::milliseconds(50));
      co_await grace.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (stopped_)
      co_return;
    DROVER_LOG_WARN("supervisor: the exit of task {} (pid {}) was not journaled", task_id, pid);
  } else if (journal_) {
    ReadJournal(/*wait=*/true);  // a last look before calling it lost
    it = tasks_.find(task_id);
    if (it == tasks_.end() || !it->second->info->running)
      co_return;
  }
  pid_to_task_.erase(pid);
  RecordExit(task_id, ExitStatus{.unknown = true, .time_ns = NowNanos()});
}

void Server::ReadJournal(bool wait) {
  auto exits = journal_->ReadNew(wait);
  if (!exits.ok()) {
    DROVER_LOG_WARN("supervisor: reading the exit journal: {}", exits.status().ToString());
    return;
  }
  if ((journal_->busy() || journal_->more()) && !journal_retry_pending_) {
    // A reaper is writing (it holds the lock from open to close, a few microseconds;
    // inotify tells us before it closes): its records are whole in a moment. Or more
    // records wait than one turn of the loop takes: the rest on the next.
    journal_retry_pending_ = true;
    journal_retry_.expires_after(std::chrono::milliseconds(1));
    journal_retry_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_)
        return;  // cancelled by Stop(): the server may be going away
      journal_retry_pending_ = false;
      ReadJournal();
    });
  }
  for (const JournalExit& e : *exits) {
    auto it = pid_to_task_.find(e.pid);
    if (it == pid_to_task_.end())
      continue;  // not a task of ours: something a task left behind, or a finished one
    const std::string id = it->second;
    auto task = tasks_.find(id);
    if (task == tasks_.end() || !task->second->info->running ||
        task->second->info->start_ticks != e.start_ticks || e.boot != CurrentBoot())
      continue;  // an earlier process with the same pid
    pid_to_task_.erase(it);
    if (task->second->pidfd) {
      boost::system::error_code ignored;
      task->second->pidfd->close(ignored);
    }
    RecordExit(id, ExitStatus{.exit_code = e.exit_code, .signal = e.signal, .time_ns = e.time_ns});
  }
  if (unsaved_exit_)
    return;  // an exit is only in the journal: keep it there
  if (absl::Status s = journal_->TruncateIfRead(kJournalKeepBytes); !s.ok())
    DROVER_LOG_WARN("supervisor: {}", s.ToString());
}

void Server::RecordExit(const std::string& task_id, ExitStatus exit) {
  auto it = tasks_.find(task_id);
  if (it == tasks_.end())
    return;
  Task& task = *it->second;
  if (!task.info->cgroup.empty())
    exit.oom_killed = TaskCgroup(cgroups_, task.info->cgroup).OomKilled();
  // What the task wrote before it exited is in its FIFOs: into the files with it
  // before anyone hears of the exit. (Grandchildren may still write; the pumps go on.)
  for (auto& pump : task.pumps)
    pump->Drain(kExitDrainBytes);
  TaskInfo exited = *task.info;
  exited.running = false;
  exited.exit = exit;
  task.pidfd.reset();
  // The table replaces the record in place, persisted or not.
  if (absl::Status s = table_->Put(exited); !s.ok()) {
    DROVER_LOG_ERROR("supervisor: failed to record exit of {}: {}", task_id, s.ToString());
    unsaved_exit_ = true;  // the journal keeps it until the table does
  } else {
    unsaved_exit_ = false;
  }
  Broadcast({{"event", "exited"}, {"task", ToJson(*task.info)}});
}

asio::awaitable<void> Server::RemoveCgroup(std::string name) {
  const TaskCgroup cgroup(cgroups_, name);
  asio::steady_timer timer(io_);
  // Killed processes leave the cgroup once they are reaped: a few tries.
  for (int attempt = 0; attempt < 50; ++attempt) {
    cgroup.KillAll();
    absl::Status s = cgroup.Remove();
    if (s.ok())
      co_return;
    if (!absl::IsFailedPrecondition(s) || stopped_) {
      DROVER_LOG_WARN("supervisor: {}", s.ToString());
      co_return;
    }
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  DROVER_LOG_WARN("supervisor: cgroup {} is still busy; left in place", name);
}

}  // namespace drover::supervisor
