// Waiting for a previous allocation that ran on another node, and pulling its ephemeral
// disk from that node (reference §7, docs/cluster.md "Sticky and migrating disks").
//
// Wait asks the servers (a blocking query) until the previous allocation is done: gone,
// client-terminal, lost or unknown, or on a node that is down or gone. Transport errors
// are retried with backoff; a refusal (the servers do not know the allocation or say it
// is not this node's) ends the wait with nothing to migrate, as in Nomad.
//
// Migrate, only for `ephemeral_disk { migrate = true }`, streams the previous
// allocation's snapshot from its node's HTTP API with the migrate token the servers
// gave, and unpacks it into the new alloc dir (allocdir/snapshot_extract.h). When the
// old node is down or gone there is nothing to pull: Migrate fails, naming why, and the
// caller starts with an empty directory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "client/allocwatcher/prev_alloc_watcher.h"
#include "common/chunk_sink.h"
#include "common/clock.h"
#include "model/prev_alloc_info.h"

namespace drover::allocwatcher {

using model::PrevAllocInfo;

// The blocking query: returns once the servers' index passes `min_index` and the
// previous allocation is done, or after `max_wait` with its state then.
using PrevAllocQuery = std::function<asio::awaitable<absl::StatusOr<PrevAllocInfo>>(
    uint64_t min_index, common::Duration max_wait)>;

using common::ChunkSink;

// Reaches other nodes' HTTP APIs (rpc/peer_fetcher.h over the network).
class SnapshotFetcher {
 public:
  virtual ~SnapshotFetcher() = default;
  // Streams GET http://<http_addr>/v1/client/allocation/<alloc_id>/snapshot, sent with
  // `token` as X-Nomad-Token, into `sink`. At most `max_bytes` of body.
  virtual asio::awaitable<absl::Status> Fetch(std::string http_addr, std::string alloc_id,
                                              std::string token, uint64_t max_bytes,
                                              ChunkSink& sink) = 0;
};

struct RemotePrevAlloc {
  std::string alloc_id;
  PrevAllocQuery query;
  SnapshotFetcher* fetcher = nullptr;  // null: data cannot be pulled (Migrate fails)
  bool migrate = false;                // the group's ephemeral disk says `migrate = true`
  uint64_t max_data = 0;               // the new allocation's ephemeral disk, in bytes
};

std::unique_ptr<PrevAllocWatcher> RemoteWatcher(RemotePrevAlloc prev, common::Clock& clock,
                                                asio::thread_pool& pool);

}  // namespace drover::allocwatcher
