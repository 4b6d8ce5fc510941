// Waiting for the allocation a new one replaces, and taking over its ephemeral disk
// (reference §7).
//
// A replacement allocation (one with PreviousAllocation set) must not start until the
// previous one has stopped, and with `ephemeral_disk { sticky = true }` or
// `migrate = true` it takes over the previous alloc's `alloc/data` and each task's
// `local/`. The watcher depends only on the previous runner's broadcaster (a listener
// of its client state reports) and the path of its alloc dir, never on the runner itself,
// so the previous runner can be destroyed at any time: a closed listener means "gone".
//
// Only a previous allocation on this node is handled. One on another node (a
// multi-node cluster) would need the remote snapshot transfer; until then the
// replacement does not wait for it and starts with a fresh directory.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "client/allocdir/alloc_dir.h"
#include "common/broadcaster.h"
#include "common/cancellation.h"
#include "model/allocation.h"

namespace drover::allocwatcher {

// A runner's reports of its alloc's client state (AllocRunner::broadcaster).
using AllocStatePtr = std::shared_ptr<const model::AllocClientUpdate>;
using AllocStateBroadcaster = common::Broadcaster<AllocStatePtr>;
using AllocListener = AllocStateBroadcaster::Listener;

class PrevAllocWatcher {
 public:
  virtual ~PrevAllocWatcher() = default;
  // Completes once the previous allocation is client-terminal or gone. Cancelled when
  // `cancel` is. Closes the listener on return.
  virtual asio::awaitable<absl::Status> Wait(common::CancellationScopePtr cancel) = 0;
  // Moves the previous alloc's data into `dest` (already built) if the group's
  // ephemeral disk asks for it. Call after Wait.
  virtual asio::awaitable<absl::Status> Migrate(allocdir::AllocDir& dest,
                                                const std::vector<std::string>& tasks) = 0;
  virtual bool IsWaiting() const = 0;
  virtual bool IsMigrating() const = 0;
};

// Never waits, never migrates.
std::unique_ptr<PrevAllocWatcher> NoopWatcher();

struct LocalPrevAlloc {
  std::string alloc_id;
  std::shared_ptr<AllocListener> listener;  // primed with the runner's latest report
  std::filesystem::path alloc_dir;          // the previous alloc's directory
};

// Watches a previous allocation run by this node. `move_data`: the group's ephemeral
// disk is sticky or migrate (a local move is allowed either way).
std::unique_ptr<PrevAllocWatcher> LocalWatcher(LocalPrevAlloc prev, bool move_data,
                                               asio::thread_pool& pool);

}  // namespace drover::allocwatcher
