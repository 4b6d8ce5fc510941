#include "client/allocrunner/migrate_disk_hook.h"

#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::allocrunner {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

asio::awaitable<absl::Status> MigrateDiskHook::Prerun() {
  // Waiting again is free once the previous alloc is done; it guards against a
  // migration of data that is still being written.
  if (absl::Status s = co_await watcher_.Wait(cancel_); !s.ok())
    co_return s;
  // A migration from another node can take long: stopping the allocation ends it.
  auto raced = co_await (watcher_.Migrate(dir_, tasks_) || cancel_->Wait());
  if (raced.index() == 1)
    co_return absl::CancelledError("stopped while migrating the previous allocation's data");
  absl::Status moved = std::get<0>(std::move(raced));
  if (moved.ok())
    co_return absl::OkStatus();
  DROVER_LOG_WARN("alloc dir {}: {}; starting with an empty directory", dir_.dir().string(),
                  moved.ToString());
  if (on_failure_)
    on_failure_(moved);
  allocdir::AllocDir* dir = &dir_;
  auto rebuild = [dir]() -> absl::Status {
    DROVER_RETURN_IF_ERROR(dir->Destroy());
    return dir->Build();
  };
  absl::Status rebuilt = co_await common::Offload(pool_, std::move(rebuild));  // named
  co_return common::Annotate(rebuilt, "failed to rebuild alloc dir after a failed migration");
}

}  // namespace drover::allocrunner
