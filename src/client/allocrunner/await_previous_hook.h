// await_previous_allocations: holds the allocation's tasks back until the allocation
// it replaces has stopped (reference §3.2 #5). Cancelled when the allocation is stopped
// or destroyed meanwhile, so a never-ending previous alloc cannot wedge this one.
#pragma once

#include "client/allocrunner/alloc_hook.h"
#include "client/allocwatcher/prev_alloc_watcher.h"

namespace drover::allocrunner {

class AwaitPreviousHook : public AllocHook {
 public:
  AwaitPreviousHook(allocwatcher::PrevAllocWatcher& watcher, common::CancellationScopePtr cancel)
      : watcher_(watcher), cancel_(std::move(cancel)) {}
  std::string_view Name() const override { return "await_previous_allocations"; }
  asio::awaitable<absl::Status> Prerun() override { return watcher_.Wait(cancel_); }

 private:
  allocwatcher::PrevAllocWatcher& watcher_;
  common::CancellationScopePtr cancel_;
};

}  // namespace drover::allocrunner
