#include "api/fs_follow.h"

#include "absl/strings/escaping.h"
#include <nlohmann/json.hpp>

#include "client/allocdir/fs_view.h"
#include "client/client.h"
#include "codec/json.h"
#include "common/offload.h"

namespace drover::api {

namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr int64_t kChunkBytes = 64 << 10;
constexpr common::Duration kMaxPoll = std::chrono::seconds(1);

struct Cursor {
  std::string rel_path;  // file being read ("" before the first)
  int64_t index = -1;    // its rotation index (logs)
  int64_t offset = 0;
  int64_t sent = 0;  // data bytes handed out so far
};

// How much the next read may take.
int64_t ChunkFor(const FollowSpec& spec, const Cursor& cursor) {
  return spec.limit < 0 ? kChunkBytes : std::min(kChunkBytes, spec.limit - cursor.sent);
}

struct Chunk {
  std::string data;
  std::string file;
  int64_t end_offset = 0;  // in `file`, after `data`
};

// Pool work: the next bytes after `cursor` (advancing it), moving on to the next
// rotated file once the current one is exhausted and a newer one exists.
absl::StatusOr<Chunk> ReadNext(const FollowSpec& spec, Cursor& cursor) {
  const allocdir::AllocDir dir(spec.alloc_root, spec.alloc_id);
  if (spec.task.empty()) {
    if (cursor.rel_path.empty()) {
      cursor.rel_path = spec.path;
      auto info = allocdir::StatPath(dir, spec.path);
      if (!info.ok())
        return info.status();
      cursor.offset = spec.from_end ? std::max<int64_t>(info->size - spec.offset, 0) : spec.offset;
    }
    auto data = allocdir::ReadFileAt(dir, cursor.rel_path, cursor.offset, ChunkFor(spec, cursor));
    if (!data.ok())
      return data.status();
    cursor.offset += static_cast<int64_t>(data->size());
    cursor.sent += static_cast<int64_t>(data->size());
    return Chunk{*std::move(data), cursor.rel_path, cursor.offset};
  }
  auto files = allocdir::LogFiles(dir, spec.task, spec.type);
  if (!files.ok())
    return files.status();
  if (cursor.index < 0) {
    // First read: place the cursor `offset` bytes from the start or end of the whole log.
    int64_t total = 0;
    for (const auto& f : *files)
      total += f.size;
    int64_t skip = spec.from_end ? std::max<int64_t>(total - spec.offset, 0) : spec.offset;
    for (const auto& f : *files) {
      cursor = Cursor{f.rel_path, f.index, std::min(skip, f.size)};
      if (skip <= f.size)
        break;
      skip -= f.size;
    }
    if (cursor.index < 0)
      return Chunk{};  // no file yet
  }
  for (const auto& f : *files) {
    if (f.index < cursor.index)
      continue;
    if (f.index > cursor.index)  // the current file was exhausted or purged: the limit
      cursor = Cursor{f.rel_path, f.index, 0, cursor.sent};  // counts across files
    auto data = allocdir::ReadFileAt(dir, cursor.rel_path, cursor.offset, ChunkFor(spec, cursor));
    if (!data.ok())
      return data.status();
    if (!data->empty()) {
      cursor.offset += static_cast<int64_t>(data->size());
      cursor.sent += static_cast<int64_t>(data->size());
      return Chunk{*std::move(data), cursor.rel_path, cursor.offset};
    }
  }
  return Chunk{};
}

// Whether more data can still come: the allocation is here and (for logs) the task is
// not dead.
bool MayGrow(ApiContext& ctx, const FollowSpec& spec) {
  allocrunner::AllocRunner* r = ctx.client ? ctx.client->GetAllocRunner(spec.alloc_id) : nullptr;
  if (r == nullptr || r->destroyed())
    return false;
  if (spec.task.empty())
    return true;
  taskrunner::TaskRunner* tr = r->task_runner(spec.task);
  return tr != nullptr && tr->state().state != model::kTaskStateDead;
}

std::string Frame(const Chunk& c) {
  codec::Json frame = {{"Offset", c.end_offset},
                       {"Data", absl::Base64Escape(c.data)},
                       {"File", c.file},
                       {"FileEvent", ""}};
  return codec::Dump(frame);  // a file name that is not UTF-8 is replaced, not thrown
}

}  // namespace

asio::awaitable<void> FollowFiles(ApiContext& ctx, FollowSpec spec, StreamWriter& out) {
  auto cursor = std::make_shared<Cursor>();
  common::Clock& clock = *ctx.clock;
  auto last_write = clock.Now();
  // A stream with nothing to send polls less and less often (up to kMaxPoll), so many
  // idle followers cost the pool little; data brings it back to spec.poll.
  common::Duration poll = spec.poll;
  for (;;) {
    if (spec.limit >= 0 && cursor->sent >= spec.limit)
      co_return;
    // Decided before reading: data written just before the task died is still read.
    const bool may_grow = spec.follow && (spec.may_grow ? spec.may_grow() : MayGrow(ctx, spec));
    auto work = [spec, cursor] { return ReadNext(spec, *cursor); };
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
