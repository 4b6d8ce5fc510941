#include "api/fs_follow.h"

#include "absl/strings/escaping.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "common/offload.h"

namespace drover::api {

namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr common::Duration kMaxPoll = std::chrono::seconds(1);

std::string Frame(const allocdir::FollowChunk& c) {
  codec::Json frame = {{"Offset", c.end_offset},
                       {"Data", absl::Base64Escape(c.data)},
                       {"File", c.file},
                       {"FileEvent", ""}};
  return codec::Dump(frame);  // a file name that is not UTF-8 is replaced, not thrown
}

}  // namespace

asio::awaitable<void> FollowFiles(ApiContext& ctx, FollowSpec spec, StreamWriter& out) {
  auto reader = std::make_shared<allocdir::FollowReader>(spec.dir, spec.target);
  common::Clock& clock = *ctx.clock;
  auto last_write = clock.Now();
  // A stream with nothing to send polls less and less often (up to kMaxPoll), so many
  // idle followers cost the pool little; data brings it back to spec.poll.
  common::Duration poll = spec.poll;
  for (;;) {
    if (reader->AtLimit())
      co_return;
    // Decided before reading: data written just before the task died is still read.
    const bool may_grow =
        spec.follow &&
        (spec.may_grow
             ? spec.may_grow()
             : ctx.client != nullptr && ctx.client->MayGrow(spec.dir.alloc_id, spec.target.task));
    auto work = [reader] { return reader->Next(); };
    auto chunk = co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload()
    if (!chunk.ok()) {
      // Mid-stream there is no status to change any more: end the body.
      co_return;
    }
    if (!chunk->data.empty()) {
      // Named, not a temporary inside co_await: see GCC 12 in docs/development.md.
      std::string piece = spec.plain ? std::move(chunk->data) : Frame(*chunk);
      if (!co_await out.Write(std::move(piece)))
        co_return;
      last_write = clock.Now();
      poll = spec.poll;
      continue;
    }
    if (!may_grow || out.ClientGone())
      co_return;
    if (!spec.plain && clock.Now() - last_write >= spec.heartbeat) {
      std::string heartbeat = "{}";
      if (!co_await out.Write(std::move(heartbeat)))
        co_return;
      last_write = clock.Now();
    }
    co_await clock.Sleep(poll);
    poll = std::min<common::Duration>(poll * 2, std::max<common::Duration>(spec.poll, kMaxPoll));
  }
}

}  // namespace drover::api
