#include "client/allocwatcher/prev_alloc_watcher.h"

#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::allocwatcher {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

class Noop : public PrevAllocWatcher {
 public:
  asio::awaitable<absl::Status> Wait(common::CancellationScopePtr /*cancel*/) override {
    co_return absl::OkStatus();
  }
  asio::awaitable<absl::Status> Migrate(allocdir::AllocDir& /*dest*/,
                                        const std::vector<std::string>& /*tasks*/) override {
    co_return absl::OkStatus();
  }
  bool IsWaiting() const override { return false; }
  bool IsMigrating() const override { return false; }
};

class Local : public PrevAllocWatcher {
 public:
  Local(LocalPrevAlloc prev, bool move_data, asio::thread_pool& pool)
      : prev_(std::move(prev)), move_data_(move_data), pool_(pool) {}

  asio::awaitable<absl::Status> Wait(common::CancellationScopePtr cancel) override {
    if (done_waiting_)
      co_return absl::OkStatus();
    waiting_ = true;
    absl::Status result = absl::OkStatus();
    for (;;) {
      auto next = co_await (prev_.listener->Next() || cancel->Wait());
      if (next.index() == 1) {
        result =
            absl::CancelledError("stopped while waiting for previous allocation " + prev_.alloc_id);
        break;
      }
      const std::optional<AllocStatePtr>& report = std::get<0>(next);
      if (!report) {
        break;  // its runner is gone: nothing left to wait for
      }
      if (model::IsClientTerminalStatus((*report)->client_status)) {
        break;
      }
    }
    waiting_ = false;
    done_waiting_ = result.ok();
    prev_.listener->Close();
    co_return result;
  }

  asio::awaitable<absl::Status> Migrate(allocdir::AllocDir& dest,
                                        const std::vector<std::string>& tasks) override {
    if (!move_data_)
      co_return absl::OkStatus();
    migrating_ = true;
    allocdir::AllocDir* d = &dest;
    auto work = [d, from = prev_.alloc_dir, tasks] { return d->Move(from, tasks); };
    absl::Status s = co_await common::Offload(pool_, std::move(work));  // named: see Offload()
    migrating_ = false;
    co_return common::Annotate(s, "failed to move data of previous allocation " + prev_.alloc_id);
  }

  bool IsWaiting() const override { return waiting_; }
  bool IsMigrating() const override { return migrating_; }

 private:
  LocalPrevAlloc prev_;
  bool move_data_;
  asio::thread_pool& pool_;
  bool waiting_ = false;
  bool done_waiting_ = false;
  bool migrating_ = false;
};

}  // namespace

std::unique_ptr<PrevAllocWatcher> NoopWatcher() {
  return std::make_unique<Noop>();
}

std::unique_ptr<PrevAllocWatcher> LocalWatcher(LocalPrevAlloc prev, bool move_data,
                                               asio::thread_pool& pool) {
  return std::make_unique<Local>(std::move(prev), move_data, pool);
}

}  // namespace drover::allocwatcher
