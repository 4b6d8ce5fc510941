#include "drivers/docker/log_stream.h"

#include <memory>

#include "codec/json.h"
#include "common/offload.h"
#include "rpc/http_call.h"
#include "supervisor/file_rotator.h"

namespace drover::drivers::docker {

namespace {

constexpr common::Duration kIdle = std::chrono::minutes(1);
// A connection's share of the output; the next one resumes where it ended.
constexpr size_t kMaxBodyPerConnection = 64 << 20;

// "<seconds>.<nanoseconds>" for ?since= (Docker keeps messages at that very time: the
// cursor's count says how many of them were written already).
std::string SinceParam(int64_t nanos) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%lld.%09lld", static_cast<long long>(nanos / 1'000'000'000),
                static_cast<long long>(nanos % 1'000'000'000));
  return buf;
}

// The two rotated files of a task, used from the pool one batch at a time.
struct Files {
  std::unique_ptr<supervisor::FileRotator> out;
  std::unique_ptr<supervisor::FileRotator> err;
};

// The task's two rotated files (blocking: on the pool).
absl::StatusOr<std::shared_ptr<Files>> OpenFiles(const TaskLogConfig& logs) {
  auto files = std::make_shared<Files>();
  auto out =
      supervisor::FileRotator::Open(logs.dir, logs.stdout_base, logs.max_files, logs.max_file_size);
  if (!out.ok())
    return out.status();
  auto err =
      supervisor::FileRotator::Open(logs.dir, logs.stderr_base, logs.max_files, logs.max_file_size);
  if (!err.ok())
    return err.status();
  files->out = *std::move(out);
  files->err = *std::move(err);
  return files;
}

// Appends a batch to the files, on the pool.
asio::awaitable<absl::Status> WriteBatch(asio::thread_pool& pool, std::shared_ptr<Files> files,
                                         std::string out, std::string err) {
  std::function<absl::Status()> write = [files, out = std::move(out),
                                         err = std::move(err)]() -> absl::Status {
    if (!out.empty()) {
      if (absl::Status s = files->out->Write(out); !s.ok())
        return s;
    }
    if (!err.empty())
      return files->err->Write(err);
    return absl::OkStatus();
  };
  co_return co_await common::Offload(pool, std::move(write));
}

// Where a connection is in replaying what was written before it (it starts at the
// cursor's time, inclusive).
struct Replay {
  bool active = false;
  int64_t skipped = 0;
};

// Appends the messages not written yet to `out` and `err`; returns the cursor after
// them. What is older than the cursor, or among the first `count` at its very time, is
// skipped, and nothing after the first new message (a long line's frames share a time).
LogCursor TakeNew(const std::vector<LogDemuxer::Message>& messages, const LogCursor& cursor,
                  Replay& replay, std::string& out, std::string& err) {
  LogCursor next = cursor;
  for (const LogDemuxer::Message& m : messages) {
    if (replay.active) {
      if (m.time < cursor.time)
        continue;
      if (m.time == cursor.time && replay.skipped < cursor.count) {
        ++replay.skipped;
        continue;
      }
      replay.active = false;
    }
    (m.stream == 1 ? out : err) += m.text;
    next.count = m.time == next.time ? next.count + 1 : 1;
    next.time = m.time;
  }
  return next;
}

}  // namespace

absl::StatusOr<std::vector<LogDemuxer::Message>> LogDemuxer::Feed(std::string_view data) {
  pending_.append(data.data(), data.size());
  std::vector<Message> out;
  size_t at = 0;
  while (pending_.size() - at >= 8) {
    const auto* h = reinterpret_cast<const unsigned char*>(pending_.data() + at);
    if (h[0] > 3 || h[1] != 0 || h[2] != 0 || h[3] != 0)
      return absl::InvalidArgumentError("docker log stream: not a frame header");
    const size_t size = (size_t{h[4]} << 24) | (size_t{h[5]} << 16) | (size_t{h[6]} << 8) | h[7];
    if (size > kMaxFrame)
      return absl::InvalidArgumentError("docker log stream: a frame of " + std::to_string(size) +
                                        " bytes");
    if (pending_.size() - at - 8 < size)
      break;
    std::string_view payload(pending_.data() + at + 8, size);
    if (h[0] == 3) {
      // Docker's own error ("Error grabbing logs: ..."): the stream is over.
      return absl::UnavailableError("docker log stream: " + std::string(payload.substr(0, 1024)));
    }
    if (h[0] == 0)
      return absl::InvalidArgumentError("docker log stream: a stdin frame");
    const size_t space = payload.find(' ');
    absl::StatusOr<common::Time> time =
        space == std::string_view::npos
            ? absl::StatusOr<common::Time>(absl::InvalidArgumentError("no timestamp"))
            : codec::ParseTime(payload.substr(0, space));
    if (!time.ok())
      return absl::InvalidArgumentError("docker log stream: a message without its timestamp");
    out.push_back(Message{.stream = h[0],
                          .time = common::ToUnixNanos(*time),
                          .text = std::string(payload.substr(space + 1))});
    at += 8 + size;
  }
  pending_.erase(0, at);
  return out;
}

asio::awaitable<absl::Status> FollowLogs(Engine& engine, std::string id, TaskLogConfig logs,
                                         LogCursor cursor, asio::thread_pool& pool,
                                         std::function<void(LogCursor)> written) {
  if (engine.api_version().empty())
    co_return absl::FailedPreconditionError("docker API version not negotiated yet");
  if (!IsContainerId(id))
    co_return absl::InvalidArgumentError("docker: container ID \"" + id + "\" is not valid");
  std::function<absl::StatusOr<std::shared_ptr<Files>>()> open = [logs] { return OpenFiles(logs); };
  absl::StatusOr<std::shared_ptr<Files>> files = co_await common::Offload(pool, std::move(open));
  if (!files.ok())
    co_return files.status();
  for (;;) {
    rpc::HttpCall call{.method = "GET",
                       .target = "/v" + engine.api_version() + "/containers/" + id +
                                 "/logs?follow=1&stdout=1&stderr=1&timestamps=1" +
                                 (cursor.time > 0 ? "&since=" + SinceParam(cursor.time) : "")};
    std::string address = engine.address();
    const rpc::HttpCallLimits limits{.max_body_bytes = kMaxBodyPerConnection, .allow_unix = true};
    auto stream =
        co_await rpc::HttpStream::Open(std::move(address), std::move(call), kIdle, limits);
    if (!stream.ok())
      co_return stream.status();
    if ((*stream)->head().status != 200) {
      co_return (*stream)->head().status == 404
          ? absl::NotFoundError("docker: no container " + id)
          : absl::InternalError("docker: logs of " + id + ": HTTP status " +
                                std::to_string((*stream)->head().status));
    }
    LogDemuxer demux;
    Replay replay{.active = cursor.time > 0};
    bool ended = false;
    absl::Status broke;
    while (!ended) {
      absl::StatusOr<std::string> piece = co_await (*stream)->Next();
      if (!piece.ok()) {
        broke = piece.status();
        break;
      }
      if (piece->empty()) {
        ended = true;
        break;
      }
      absl::StatusOr<std::vector<LogDemuxer::Message>> messages = demux.Feed(*piece);
      if (!messages.ok())
        co_return messages.status();
      std::string out, err;
      const LogCursor next = TakeNew(*messages, cursor, replay, out, err);
      if (out.empty() && err.empty())
        continue;
      auto write = WriteBatch(pool, *files, std::move(out), std::move(err));
      if (absl::Status s = co_await std::move(write); !s.ok())
        co_return s;
      cursor = next;
      if (written)
        written(cursor);
    }
    if (ended) {
      // Docker ends a followed stream when the container stops: everything came.
      std::string inspect = id;  // named: no temporaries inside co_await (GCC 12)
      absl::StatusOr<Engine::ContainerState> state =
          co_await engine.InspectContainer(std::move(inspect));
      if (!state.ok())
        co_return state.status();  // the caller follows again once it can tell
      if (!state->running)
        co_return absl::OkStatus();
    } else if (!absl::IsDeadlineExceeded(broke) && !absl::IsResourceExhausted(broke) &&
               !absl::IsUnavailable(broke)) {
      co_return broke;
    } else if (absl::IsUnavailable(broke)) {
      // The daemon went away: the caller follows again once it is back.
      co_return broke;
    }
    // Idle, or this connection's share used up: again, from the last message written.
  }
}

}  // namespace drover::drivers::docker
