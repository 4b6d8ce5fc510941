// Streaming bodies of the fs endpoints: a task's log or one file of an allocation, sent
// as it grows (`follow=true`, `/v1/client/fs/stream`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "api/api_context.h"
#include "api/http_types.h"

namespace drover::api {

struct FollowSpec {
  std::filesystem::path alloc_root;
  std::string alloc_id;
  // Either a task's log (task + "stdout"/"stderr", across its rotated files) ...
  std::string task;
  std::string type;
  // ... or one file (a path relative to the alloc dir).
  std::string path;
  int64_t offset = 0;
  bool from_end = false;  // offset counts back from the end
  // The most bytes to send (negative: no limit). Reads without `follow` set it to what
  // was there when the request came, so a file a task keeps writing still ends.
  int64_t limit = -1;
  bool plain = false;  // raw bytes instead of JSON frames
  bool follow = true;  // keep going at end of data (else stop there)
  // Whether more data may still come (the task is alive, the allocation is here);
  // asked at every end of data. Unset: the endpoint's check against the client.
  std::function<bool()> may_grow;
  common::Duration heartbeat = std::chrono::seconds(10);
  common::Duration poll = std::chrono::milliseconds(200);
};

// Writes what is there, then (with `follow`) what is added, until the client goes
// away, `may_grow` says no more will come and everything was sent, `limit` bytes were
// sent, or the allocation is gone. At most one chunk (64 KiB) is in memory at a time. Frames are
// Nomad's StreamFrame objects {Offset (where the data ends), Data (base64), File, FileEvent}, with
// `{}` as a heartbeat after `heartbeat` of silence. Uses ctx.pool for reads and ctx.clock for time.
asio::awaitable<void> FollowFiles(ApiContext& ctx, FollowSpec spec, StreamWriter& out);

}  // namespace drover::api
