// Server's private parts shared by its source files (server.cc: the socket, requests
// and spawning; server_exits.cc: adoption, exits and their journal). Not for others.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "common/clock.h"
#include "supervisor/file_rotator.h"
#include "supervisor/server.h"

namespace drover::supervisor {

// A pump moves at most this much per wake-up; at an exit, what the task left behind is
// drained up to kExitDrainBytes before the exit is reported.
inline constexpr size_t kDrainBytes = 1 << 20;
inline constexpr size_t kExitDrainBytes = 16 << 20;

inline int64_t NowNanos() {
  return common::ToUnixNanos(common::RealClock().Now());
}

// One stream of a task's output: the read end of its FIFO and the files it goes to.
struct Server::LogPump {
  LogPump(asio::io_context& io, int fd, std::unique_ptr<FileRotator> r)
      : fifo(io, fd), rotator(std::move(r)) {}
  asio::posix::stream_descriptor fifo;
  std::unique_ptr<FileRotator> rotator;
  bool eof = false;

  // Copies what the FIFO holds now into the files, without blocking, at most
  // `max_bytes` (a task writing without pause must not hold the loop). At end of file
  // (every writer closed it) the pump closes.
  void Drain(size_t max_bytes) {
    std::array<char, 65536> buf{};
    size_t moved = 0;
    while (!eof && moved < max_bytes) {
      const ssize_t n = ::read(fifo.native_handle(), buf.data(), buf.size());
      if (n > 0) {
        moved += static_cast<size_t>(n);
        if (absl::Status s = rotator->Write(std::string_view(buf.data(), static_cast<size_t>(n)));
            !s.ok())
          DROVER_LOG_WARN("supervisor: log write: {}", s.ToString());
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
      Finish();
    }
  }
  void Finish() {
    eof = true;
    boost::system::error_code ec;
    fifo.close(ec);
    (void)rotator->Close();
  }
};

struct Server::Task {
  TaskInfo info;
  // Adopted from an earlier supervisor: not our child; watched through a pidfd.
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;
  // Adopted while a live drover-reaper was its parent: its exit will be journaled.
  bool journaled = false;
  std::vector<std::shared_ptr<LogPump>> pumps;
};

}  // namespace drover::supervisor
