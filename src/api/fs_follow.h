// Streaming bodies of the fs endpoints: a task's log or one file of an allocation, sent
// as it grows (`follow=true`, `/v1/client/fs/stream`). The reading itself is the
// client's (allocdir/follow_reader.h); this frames it for HTTP.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "api/api_context.h"
#include "api/http_types.h"
#include "client/allocdir/follow_reader.h"

namespace drover::api {

struct FollowSpec {
  allocdir::AllocDirLocation dir;
  // What to read, from where, and how much (reads without `follow` set the limit to
  // what was there when the request came, so a file a task keeps writing still ends).
  allocdir::FollowTarget target;
  bool plain = false;  // raw bytes instead of JSON frames
  bool follow = true;  // keep going at end of data (else stop there)
  // Whether more data may still come (the task is alive, the allocation is here);
  // asked at every end of data. Unset: ctx.client->MayGrow.
  std::function<bool()> may_grow;
  common::Duration heartbeat = std::chrono::seconds(10);
  common::Duration poll = std::chrono::milliseconds(200);
};

// Writes what is there, then (with `follow`) what is added, until the client goes
// away, `may_grow` says no more will come and everything was sent, the limit was
// sent, or the allocation is gone. At most one chunk (64 KiB) is in memory at a time.
// Frames are Nomad's StreamFrame objects {Offset (where the data ends), Data (base64),
// File, FileEvent}, with `{}` as a heartbeat after `heartbeat` of silence. Uses ctx.pool
// for reads and ctx.clock for time.
asio::awaitable<void> FollowFiles(ApiContext& ctx, FollowSpec spec, StreamWriter& out);

}  // namespace drover::api
