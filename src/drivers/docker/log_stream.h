// A container's output into the task's rotated log files (alloc/logs/<task>.stdout.N and
// .stderr.N, as the other drivers write them), from the Engine API's followed logs.
//
// Docker sends a container without a TTY as frames: an 8-byte header (1 stdout or 2
// stderr, three zero bytes, the payload's length, big-endian) and the payload; with
// timestamps, each message starts with its RFC 3339 time and a space. The time of the
// last message written is what a follower resumes from after an agent restart, so that
// nothing is written twice or lost.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "common/asio.h"
#include "drivers/docker/engine.h"
#include "drivers/driver.h"

namespace drover::drivers::docker {

class LogDemuxer {
 public:
  struct Message {
    int stream = 1;    // 1 stdout, 2 stderr
    int64_t time = 0;  // Unix nanoseconds
    std::string text;  // without the timestamp
  };
  // The largest frame taken (Docker splits long lines at 16 KiB).
  static constexpr size_t kMaxFrame = 1 << 20;
  // Takes more bytes of the stream; returns the messages completed by them.
  // InvalidArgument for a header that is not Docker's, a frame over kMaxFrame, or a
  // message without a timestamp.
  absl::StatusOr<std::vector<Message>> Feed(std::string_view data);

 private:
  std::string pending_;
};

// Follows container `id`'s output into `logs`, from messages after `since` (Unix ns;
// 0: from the start), until the container has stopped and all of it was written (OK),
// or the caller cancels. After each batch is on disk, `written(time)` gets the time of
// its last message. A connection that breaks or stays idle is opened again from there
// while the container runs. Writes run on `pool`.
asio::awaitable<absl::Status> FollowLogs(Engine& engine, std::string id, TaskLogConfig logs,
                                         int64_t since, asio::thread_pool& pool,
                                         std::function<void(int64_t)> written);

}  // namespace drover::drivers::docker
