// What the servers tell a node about the allocation one of its allocations replaces
// (the previous allocation, maybe on another node): enough to wait for it to stop and
// to pull its ephemeral disk (docs/cluster.md "Sticky and migrating disks").
#pragma once

#include <cstdint>
#include <string>

namespace drover::model {

struct PrevAllocInfo {
  std::string alloc_id;
  bool gone = false;  // the servers no longer hold it
  // Nothing left to wait for: gone, client-terminal, lost or unknown, or on a node that
  // is down or gone.
  bool done = false;
  std::string client_status;  // as its node last reported
  std::string node_id;
  std::string node_status;     // "ready", "down", ... ("" when the node is gone)
  std::string node_http_addr;  // where its snapshot is served
  // Set when its group's ephemeral disk migrates and its node is up: the token its node
  // takes for the snapshot (common/derived_token.h).
  std::string migrate_token;
  uint64_t index = 0;  // for the next blocking query
  friend bool operator==(const PrevAllocInfo&, const PrevAllocInfo&) = default;
};

}  // namespace drover::model
