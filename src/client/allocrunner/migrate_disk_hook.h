// migrate_disk: takes over the previous allocation's ephemeral disk (alloc/data and each
// task's local/) when the group asks for it (reference §3.2 #6). Migration failure is
// soft, as in Nomad: it is logged and the allocation starts with a fresh, empty
// directory rather than with half-moved data; `on_failure` tells the tasks why (an event).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client/allocdir/alloc_dir.h"
#include "client/allocrunner/alloc_hook.h"
#include "client/allocwatcher/prev_alloc_watcher.h"

namespace drover::allocrunner {

class MigrateDiskHook : public AllocHook {
 public:
  MigrateDiskHook(allocwatcher::PrevAllocWatcher& watcher, common::CancellationScopePtr cancel,
                  allocdir::AllocDir& dir, std::vector<std::string> tasks, asio::thread_pool& pool,
                  std::function<void(const absl::Status&)> on_failure)
      : watcher_(watcher),
        cancel_(std::move(cancel)),
        dir_(dir),
        tasks_(std::move(tasks)),
        pool_(pool),
        on_failure_(std::move(on_failure)) {}
  std::string_view Name() const override { return "migrate_disk"; }
  asio::awaitable<absl::Status> Prerun() override;

 private:
  allocwatcher::PrevAllocWatcher& watcher_;
  common::CancellationScopePtr cancel_;
  allocdir::AllocDir& dir_;
  std::vector<std::string> tasks_;
  asio::thread_pool& pool_;
  std::function<void(const absl::Status&)> on_failure_;
};

}  // namespace drover::allocrunner
