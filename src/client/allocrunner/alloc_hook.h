// Alloc-level hooks (reference §3.1): steps around an allocation's tasks that belong to
// the allocation as a whole (its directory, waiting for the allocation it replaces,
// migrating its data, the group's shutdown delay). One hook per file; every phase
// defaults to a no-op. The AllocRunner calls them in registration order on the control
// loop, with these error policies:
//   Prerun    once before the tasks start, only if the alloc should run; the first
//             error stops prerun and fails every task ("pre-run hook %q failed: ...").
//   Update    on every non-terminal server update; all run, errors are logged.
//   Postrun   after every task finished (not on agent shutdown); all run, errors logged.
//   Destroy   when the alloc is destroyed, after Run finished; all run, errors logged.
//   PreKill   at the start of every kill of live tasks.
//   Shutdown  on agent shutdown (tasks keep running).
// A hook that throws is treated as one that failed.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/status.h"

#include "common/asio.h"
#include "model/allocation.h"

namespace drover::allocrunner {

class AllocHook {
 public:
  virtual ~AllocHook() = default;
  AllocHook() = default;
  AllocHook(const AllocHook&) = delete;
  AllocHook& operator=(const AllocHook&) = delete;

  virtual std::string_view Name() const = 0;

  virtual asio::awaitable<absl::Status> Prerun() { co_return absl::OkStatus(); }
  virtual asio::awaitable<absl::Status> Update(std::shared_ptr<const model::Allocation> /*alloc*/) {
    co_return absl::OkStatus();
  }
  virtual asio::awaitable<absl::Status> Postrun() { co_return absl::OkStatus(); }
  virtual asio::awaitable<absl::Status> Destroy() { co_return absl::OkStatus(); }
  virtual asio::awaitable<void> PreKill() { co_return; }
  virtual asio::awaitable<void> Shutdown() { co_return; }
};

using AllocHookPtr = std::unique_ptr<AllocHook>;

}  // namespace drover::allocrunner
