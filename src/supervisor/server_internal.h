// Server's private parts shared by its source files (server.cc: the socket, requests
// and spawning; server_exits.cc: adoption, exits and their journal). Not for others.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "common/clock.h"
#include "common/unique_fd.h"
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

// Where a task's output goes: its log dir, opened once by StartLogs (for a spawn,
// before the task runs, so that renaming the dir or a parent later leads nowhere), and
// the files' names and limits. Shared by the task's two pumps.
struct Server::LogTarget {
  common::UniqueFd dir;
  LogSpec spec;
};

// One stream of a task's output: the read end of its FIFO and the files it goes to.
// The files are opened at the first output, not before: many tasks write nothing for
// long, and an open rotator holds a descriptor and ~300 bytes (StartLogs has created
// the first file already, so readers find it).
struct Server::LogPump {
  LogPump(asio::io_context& io, int fd, std::shared_ptr<const LogTarget> t, bool is_stderr)
      : fifo(io, fd), target(std::move(t)), stderr_stream(is_stderr) {}
  asio::posix::stream_descriptor fifo;
  std::shared_ptr<const LogTarget> target;
  bool stderr_stream = false;
  std::unique_ptr<FileRotator> rotator;  // null until the first output
  bool open_failed = false;              // logged once; each output tries again
  bool eof = false;

  // The stream's rotated files, opened if need be; null if they cannot be.
  FileRotator* Files() {
    if (rotator == nullptr) {
      const LogSpec& spec = target->spec;
      auto r = FileRotator::OpenAt(target->dir.get(), spec.dir,
                                   stderr_stream ? spec.stderr_base : spec.stdout_base,
                                   spec.max_files, spec.max_file_size);
      if (!r.ok()) {
        if (!std::exchange(open_failed, true))
          DROVER_LOG_WARN("supervisor: log files: {}", r.status().ToString());
        return nullptr;
      }
      rotator = std::move(*r);
    }
    return rotator.get();
  }

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
        FileRotator* files = Files();  // what cannot be written is dropped
        if (files == nullptr)
          continue;
        if (absl::Status s = files->Write(std::string_view(buf.data(), static_cast<size_t>(n)));
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
    if (rotator != nullptr)
      (void)rotator->Close();
  }
};

struct Server::Task {
  // The task table's record of it (the table keeps a record at one address until it is
  // removed). One copy per task: a node holds thousands. Changed by putting an updated
  // copy into the table.
  const TaskInfo* info = nullptr;
  // Adopted from an earlier supervisor: not our child; watched through a pidfd.
  std::unique_ptr<asio::posix::stream_descriptor> pidfd;
  // Adopted while a live drover-reaper was its parent: its exit will be journaled.
  bool journaled = false;
  std::vector<std::shared_ptr<LogPump>> pumps;
};

}  // namespace drover::supervisor
