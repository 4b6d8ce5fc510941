// How a client reaches another node's HTTP API: the snapshot of a previous allocation,
// for a replacement here to take over its ephemeral disk (allocwatcher/remote_watcher.h).
#pragma once

#include "client/allocwatcher/remote_watcher.h"
#include "common/clock.h"

namespace drover::rpc {

class PeerSnapshotFetcher final : public allocwatcher::SnapshotFetcher {
 public:
  // `idle_timeout` bounds each wait for the old node, not the whole transfer.
  explicit PeerSnapshotFetcher(common::Duration idle_timeout) : timeout_(idle_timeout) {}
  // Unavailable when the node cannot be reached, PermissionDenied when it refuses the
  // token, ResourceExhausted past `max_bytes`; the sink's own errors as they are.
  asio::awaitable<absl::Status> Fetch(std::string http_addr, std::string alloc_id,
                                      std::string token, uint64_t max_bytes,
                                      allocwatcher::ChunkSink& sink) override;

 private:
  common::Duration timeout_;
};

}  // namespace drover::rpc
