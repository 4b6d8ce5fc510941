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

// How far a container's output was written: the time of the last message written, and
// how many messages at that very time were (a long line's frames share one). What the
// driver persists to resume after an agent restart. {0, 0}: nothing yet.
struct LogCursor {
  int64_t time = 0;  // Unix nanoseconds
  int64_t count = 0;
  friend bool operator==(const LogCursor&, const LogCursor&) = default;
};

// Follows container `id`'s output into `logs`, after `cursor`, until the container has
// stopped and all of it was written (OK), or the caller cancels. After each batch is on
// disk, `written` gets the new cursor. A connection that stays idle or used up its
// share is opened again from there while the container runs; the daemon going away
// (Unavailable) or its own error frames end the follow, for the caller to resume.
// Writes run on `pool`. Messages stamped out of order between stdout and stderr near a
// resume point can be missed: Docker's `since` filters by time, not position.
asio::awaitable<absl::Status> FollowLogs(Engine& engine, std::string id, TaskLogConfig logs,
                                         LogCursor cursor, asio::thread_pool& pool,
                                         std::function<void(LogCursor)> written);

}  // namespace drover::drivers::docker
