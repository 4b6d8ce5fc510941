#include "client/taskrunner/logs_hook.h"

#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::taskrunner {

namespace {

std::string FifoPath(const model::Task& task, const allocdir::AllocDir& dir,
                     const std::string& stream) {
  if (task.log_config.disabled)
    return "";
  return (dir.logs_dir() / ("." + task.name + "." + stream + ".fifo")).string();
}

absl::StatusOr<std::unique_ptr<supervisor::FileRotator>> OpenRotator(const model::Task& task,
                                                                     const allocdir::AllocDir& dir,
                                                                     const std::string& stream) {
  const int max_files =
      task.log_config.max_files > 0 ? task.log_config.max_files : kDefaultLogMaxFiles;
  const int64_t max_mb = task.log_config.max_file_size_mb > 0 ? task.log_config.max_file_size_mb
                                                              : kDefaultLogMaxFileSizeMb;
  return supervisor::FileRotator::Open(dir.logs_dir(), task.name + "." + stream, max_files,
                                       max_mb << 20);
}

using RotatorPtr = std::unique_ptr<supervisor::FileRotator>;
using Rotators = std::pair<RotatorPtr, RotatorPtr>;

}  // namespace

std::string LogsHook::StdoutPath(const model::Task& task, const allocdir::AllocDir& dir) {
  return FifoPath(task, dir, "stdout");
}

std::string LogsHook::StderrPath(const model::Task& task, const allocdir::AllocDir& dir) {
  return FifoPath(task, dir, "stderr");
}

asio::awaitable<absl::Status> LogsHook::Prestart(const PrestartRequest& req,
                                                 PrestartResponse* /*resp*/) {
  const model::Task& task = *req.task;
  if (task.log_config.disabled || (stdout_ && stderr_))
    co_return absl::OkStatus();
  // Opening a rotator scans and creates files: pool work. The collectors themselves
  // belong to the control loop and start here.
  const allocdir::AllocDir* dir = req.alloc_dir;
  auto work = [&task, dir]() -> absl::StatusOr<Rotators> {
    DROVER_ASSIGN_OR_RETURN(RotatorPtr out, OpenRotator(task, *dir, "stdout"));
    DROVER_ASSIGN_OR_RETURN(RotatorPtr err, OpenRotator(task, *dir, "stderr"));
    return Rotators(std::move(out), std::move(err));
  };
  auto opened = co_await common::Offload(pool_, std::move(work));  // named: see Offload()
  if (!opened.ok()) {
    co_return common::Annotate(opened.status(), "failed to open log files");
  }
  auto out =
      logs::LogCollector::Start(executor_, pool_, StdoutPath(task, *dir), std::move(opened->first));
  if (!out.ok()) {
    co_return common::Annotate(out.status(), "failed to collect stdout");
  }
  auto err = logs::LogCollector::Start(executor_, pool_, StderrPath(task, *dir),
                                       std::move(opened->second));
  if (!err.ok()) {
    co_await (*out)->Stop();
    co_return common::Annotate(err.status(), "failed to collect stderr");
  }
  stdout_ = std::move(*out);
  stderr_ = std::move(*err);
  co_return absl::OkStatus();
}

asio::awaitable<void> LogsHook::StopCollectors() {
  if (stdout_) {
    co_await stdout_->Stop();
    stdout_.reset();
  }
  if (stderr_) {
    co_await stderr_->Stop();
    stderr_.reset();
  }
}

asio::awaitable<absl::Status> LogsHook::Stop(const StopRequest& /*req*/) {
  co_await StopCollectors();
  co_return absl::OkStatus();
}

asio::awaitable<void> LogsHook::Shutdown() {
  // The agent is going away and leaves the task running. Until the node supervisor
  // owns log collection, output written after this point is not collected.
  co_await StopCollectors();
}

}  // namespace drover::taskrunner
