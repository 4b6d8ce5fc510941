// Collects one stream of a task's output (stdout or stderr): the task writes into a
// FIFO, the collector reads it on the control loop and hands each chunk to a
// FileRotator on the blocking pool. The counterpart of Nomad's logmon.
//
// The collector holds a write end of the FIFO itself, so a task opening the FIFO for
// writing never blocks, and the reader never sees EOF when the task exits: a restarted
// task opens the same FIFO again and collection simply continues.
//
// Lives on the control loop: Start and Stop run there; not thread-safe.
#pragma once

#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include <boost/asio/posix/stream_descriptor.hpp>

#include "common/asio.h"
#include "common/event.h"
#include "supervisor/file_rotator.h"

namespace drover::logs {

class LogCollector {
 public:
  // Creates the FIFO at `fifo_path` if missing (mode 0666: tasks may run as other
  // users), opens it and starts reading on `executor`, writing through `rotator` on
  // `pool`. An existing FIFO is reused (e.g. after an agent restart); anything else at
  // that path is FailedPrecondition. `pool` must outlive the collector.
  static absl::StatusOr<std::unique_ptr<LogCollector>> Start(
      asio::any_io_executor executor, asio::thread_pool& pool, std::filesystem::path fifo_path,
      std::unique_ptr<supervisor::FileRotator> rotator);

  // REQUIRES: Stop() has completed. The reading coroutine (and, during Stop, the pool)
  // refers to this object until then; destroying it earlier aborts (DROVER_CHECK). The
  // one exception: the reader died on its own (a read error, logged) and Stop was never
  // called; then the FIFO file is left behind.
  ~LogCollector();
  LogCollector(const LogCollector&) = delete;
  LogCollector& operator=(const LogCollector&) = delete;

  // Stops reading, waits for the reading coroutine to exit (including a chunk it is
  // writing on the pool), then drains what is still buffered in the FIFO into the
  // files, closes the files and the FIFO and removes the FIFO file. Errors are logged.
  // Idempotent; a second call completes when the first has.
  asio::awaitable<void> Stop();

  const std::filesystem::path& fifo_path() const { return fifo_path_; }

 private:
  LogCollector(asio::any_io_executor executor, asio::thread_pool& pool,
               std::filesystem::path fifo_path, std::unique_ptr<supervisor::FileRotator> rotator);

  // The reading coroutine: ReadChunks until stopped or a read error, then sets
  // loop_exited_ (also when ReadChunks throws).
  asio::awaitable<void> ReadLoop();
  asio::awaitable<void> ReadChunks();

  asio::thread_pool& pool_;
  const std::filesystem::path fifo_path_;
  // Used by one pool thread at a time: each write is awaited before the next one, and
  // Stop touches it only after the reading coroutine has exited.
  const std::unique_ptr<supervisor::FileRotator> rotator_;
  asio::posix::stream_descriptor fifo_;
  bool stopping_ = false;  // Stop has begun: the reader exits after its current chunk
  common::Event loop_exited_;
  common::Event stopped_;  // Stop has completed
};

}  // namespace drover::logs
