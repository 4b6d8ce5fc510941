// The supervisor's side of drover-reaper (server.h): following the exit journal, and
// the reaper's own death.
#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/logging.h"
#include "common/offload.h"
#include "supervisor/process.h"
#include "supervisor/server.h"

namespace drover::supervisor {

absl::Status Server::AttachReaper() {
  const pid_t reaper = getppid();
  if (!IsReaper(reaper)) {
    return absl::FailedPreconditionError("-journal is given, but the parent process (pid " +
                                         std::to_string(reaper) +
                                         ") is not drover-reaper: tasks would not be journaled");
  }
  const int pidfd = PidfdOpen(reaper);
  if (pidfd < 0)
    return absl::InternalError(std::string("pidfd_open of the reaper: ") + std::strerror(errno));
  reaper_pidfd_ = std::make_unique<asio::posix::stream_descriptor>(io_, pidfd);
  reaper_pid_ = reaper;
  // The reaper creates it at its first exit; watched from now on.
  const int created =
      open(config_.journal.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (created < 0) {
    return absl::InternalError("failed to open '" + config_.journal.string() +
                               "': " + std::strerror(errno));
  }
  close(created);
  journal_ = std::make_unique<JournalReader>(config_.journal.string());
  const int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watch < 0)
    return absl::InternalError(std::string("inotify_init1: ") + std::strerror(errno));
  journal_watch_ = std::make_unique<asio::posix::stream_descriptor>(io_, watch);
  if (inotify_add_watch(watch, config_.journal.c_str(), IN_MODIFY | IN_CLOSE_WRITE) < 0) {
    return absl::InternalError("inotify_add_watch '" + config_.journal.string() +
                               "': " + std::strerror(errno));
  }
  common::SpawnDetached(io_.get_executor(), WatchJournal(), "exit journal");
  common::SpawnDetached(io_.get_executor(), WatchReaper(), "reaper");
  DROVER_LOG_INFO("supervisor: under drover-reaper (pid {}), journal {}", reaper,
                  config_.journal.string());
  return absl::OkStatus();
}

asio::awaitable<void> Server::WatchJournal() {
  std::array<char, 4096> events{};
  while (!stopped_) {
    auto [ec, n] = co_await journal_watch_->async_read_some(asio::buffer(events),
                                                            asio::as_tuple(asio::use_awaitable));
    if (ec || stopped_)
      co_return;
    ReadJournal();
  }
}

asio::awaitable<void> Server::WatchReaper() {
  auto [ec] = co_await reaper_pidfd_->async_wait(asio::posix::descriptor_base::wait_read,
                                                 asio::as_tuple(asio::use_awaitable));
  if (ec || stopped_)
    co_return;
  ReadJournal(/*wait=*/true);
  DROVER_LOG_ERROR(
      "supervisor: drover-reaper is gone; exiting, so that the agent starts a new pair "
      "(tasks keep running; the exits of those it held are unknown from now on)");
  RequestExit();
}

}  // namespace drover::supervisor
