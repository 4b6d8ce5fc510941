#include "client/logs/log_collector.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::logs {

using supervisor::FileRotator;
namespace fs = std::filesystem;
namespace {

// Read size per chunk: also the most one rotator write (one pool hop) carries.
constexpr size_t kChunkSize = 64 * 1024;
// Drain bound when the pipe's capacity cannot be queried.
constexpr int64_t kDefaultDrainBytes = 1024 * 1024;

std::string Errno(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// Blocking (runs on the pool): reads what is buffered in the FIFO (`fd` is
// non-blocking) into `rotator`, then closes the rotator and removes the FIFO file.
// Reads at most the pipe's capacity — everything buffered when the drain began — so a
// task that keeps writing cannot hold Stop forever.
void Drain(int fd, FileRotator& rotator, const fs::path& fifo_path) {
  int64_t left = ::fcntl(fd, F_GETPIPE_SZ);
  if (left <= 0) {
    left = kDefaultDrainBytes;
  }
  std::vector<char> buffer(kChunkSize);
  while (left > 0) {
    const ssize_t n =
        ::read(fd, buffer.data(), static_cast<size_t>(std::min<int64_t>(left, kChunkSize)));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        DROVER_LOG_WARN("logs: failed to drain '{}': {}", fifo_path.string(), Errno(errno));
      }
      break;
    }
    if (n == 0) {
      break;  // no writer left (cannot happen while we hold our write end)
    }
    left -= n;
    if (absl::Status s = rotator.Write(std::string_view(buffer.data(), static_cast<size_t>(n)));
        !s.ok()) {
      DROVER_LOG_WARN("logs: dropped {} bytes from '{}': {}", n, fifo_path.string(), s.ToString());
    }
  }
  if (absl::Status s = rotator.Close(); !s.ok()) {
    DROVER_LOG_WARN("logs: {}", s.ToString());
  }
  if (::unlink(fifo_path.c_str()) != 0 && errno != ENOENT) {
    DROVER_LOG_WARN("logs: failed to remove FIFO '{}': {}", fifo_path.string(), Errno(errno));
  }
}

}  // namespace

LogCollector::LogCollector(asio::any_io_executor executor, asio::thread_pool& pool,
                           fs::path fifo_path, std::unique_ptr<FileRotator> rotator)
    : pool_(pool),
      fifo_path_(std::move(fifo_path)),
      rotator_(std::move(rotator)),
      fifo_(executor),
      loop_exited_(executor),
      stopped_(executor) {}

LogCollector::~LogCollector() {
  DROVER_CHECK(loop_exited_.IsSet() && (stopped_.IsSet() || !stopping_));
}

absl::StatusOr<std::unique_ptr<LogCollector>> LogCollector::Start(
    asio::any_io_executor executor, asio::thread_pool& pool, fs::path fifo_path,
    std::unique_ptr<FileRotator> rotator) {
  if (rotator == nullptr) {
    return absl::InvalidArgumentError("log collector for '" + fifo_path.string() +
                                      "' needs a rotator");
  }
  const std::string p = fifo_path.string();
  // Short system calls only: Start runs on the control loop.
  bool created = false;
  struct stat st {};
  if (::lstat(fifo_path.c_str(), &st) == 0) {
    if (!S_ISFIFO(st.st_mode)) {
      return absl::FailedPreconditionError("log FIFO path '" + p + "' exists and is not a FIFO");
    }
  } else if (errno != ENOENT) {
    return absl::InternalError("failed to stat log FIFO '" + p + "': " + Errno(errno));
  } else if (::mkfifo(fifo_path.c_str(), 0666) == 0) {
    created = true;
    // mkfifo's mode is narrowed by the umask; tasks may run as other users.
    if (::chmod(fifo_path.c_str(), 0666) != 0) {
      const int err = errno;
      ::unlink(fifo_path.c_str());
      return absl::InternalError("failed to chmod log FIFO '" + p + "': " + Errno(err));
    }
  } else if (errno != EEXIST) {  // EEXIST: raced with another creator; checked below
    return absl::InternalError("failed to create log FIFO '" + p + "': " + Errno(errno));
  }
  // Uses `p`, not `fifo_path`: the latter is moved into the collector below.
  auto fail = [&p, created](absl::Status s) {
    if (created) {
      ::unlink(p.c_str());
    }
    return s;
  };

  // O_RDWR: holding a write end ourselves means a task's open(O_WRONLY) never blocks
  // waiting for a reader, and we never read EOF when the task exits (and restarts).
  // O_NOFOLLOW and the fstat check: the path may have been replaced since the lstat.
  const int fd = ::open(fifo_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return fail(absl::InternalError("failed to open log FIFO '" + p + "': " + Errno(errno)));
  }
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    return fail(
        absl::FailedPreconditionError("log FIFO path '" + p + "' exists and is not a FIFO"));
  }

  std::unique_ptr<LogCollector> c(
      new LogCollector(executor, pool, std::move(fifo_path), std::move(rotator)));
  boost::system::error_code ec;
  c->fifo_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    c->loop_exited_.Set();  // never started; the destructor may run
    return fail(absl::InternalError("failed to watch log FIFO '" + p + "': " + ec.message()));
  }
  common::SpawnDetached(executor, c->ReadLoop(), "log collector for " + p);
  return c;
}

asio::awaitable<void> LogCollector::ReadLoop() {
  try {
    co_await ReadChunks();
  } catch (const std::exception& e) {
    DROVER_LOG_ERROR("logs: collecting '{}' failed: {}", fifo_path_.string(), e.what());
  }
  loop_exited_.Set();
}

asio::awaitable<void> LogCollector::ReadChunks() {
  std::vector<char> buffer(kChunkSize);
  FileRotator* const rotator = rotator_.get();
  // Named rather than written inside the co_await expressions (GCC 12, see Offload).
  const auto token = asio::as_tuple(asio::use_awaitable);
  const asio::mutable_buffer into = asio::buffer(buffer);
  while (!stopping_) {
    auto [ec, n] = co_await fifo_.async_read_some(into, token);
    if (n > 0) {
      // Written before anything else is read, so the files keep the FIFO's order; a
      // chunk read as Stop began is still written (Stop waits for us).
      const std::string_view chunk(buffer.data(), n);
      auto work = [rotator, chunk] { return rotator->Write(chunk); };
      const absl::Status s = co_await common::Offload(pool_, std::move(work));
      if (!s.ok()) {
        DROVER_LOG_WARN("logs: dropped {} bytes from '{}': {}", n, fifo_path_.string(),
                        s.ToString());
      }
    }
    if (ec == asio::error::operation_aborted) {
      continue;  // Stop cancelled the read; the loop condition ends it
    }
    if (ec) {
      // EOF cannot happen while we hold a write end; anything else is not transient.
      DROVER_LOG_WARN("logs: reading '{}' failed: {}", fifo_path_.string(), ec.message());
      co_return;
    }
  }
}

asio::awaitable<void> LogCollector::Stop() {
  if (stopping_) {
    co_await stopped_.Wait();
    co_return;
  }
  stopping_ = true;
  // Aborts a pending read. If the reader is instead writing a chunk on the pool, it
  // sees stopping_ when that is done; either way we wait until it has exited so the
  // drain below never runs alongside its write.
  boost::system::error_code ignored;
  fifo_.cancel(ignored);
  co_await loop_exited_.Wait();

  const int fd = fifo_.native_handle();
  FileRotator* const rotator = rotator_.get();
  const fs::path path = fifo_path_;
  auto work = [fd, rotator, path] { Drain(fd, *rotator, path); };
  co_await common::Offload(pool_, std::move(work));
  fifo_.close(ignored);
  stopped_.Set();
}

}  // namespace drover::logs
