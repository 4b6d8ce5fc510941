#include "client/allocwatcher/remote_watcher.h"

#include <algorithm>
#include <optional>

#include "client/allocdir/snapshot_extract.h"
#include "common/logging.h"
#include "common/offload.h"
#include "common/status_macros.h"

namespace drover::allocwatcher {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

namespace {

// How long one blocking query may wait, and the backoff between failed ones.
constexpr common::Duration kQueryWait = std::chrono::minutes(5);
constexpr common::Duration kFirstBackoff = std::chrono::seconds(1);
constexpr common::Duration kMaxBackoff = std::chrono::seconds(30);

// Headers and padding on top of the file data: each entry costs a block or two.
constexpr uint64_t kArchiveOverhead = uint64_t{256} << 20;

// Answers the servers give for an allocation they will not describe to this node. Not
// NotFound or Unauthenticated: those say the node must register again, and are retried.
bool Refusal(const absl::Status& s) {
  return absl::IsPermissionDenied(s) || absl::IsFailedPrecondition(s) || absl::IsInvalidArgument(s);
}

// The longest a migration may take in all: 10 minutes, plus a second per MiB the disk
// may hold (a peer that trickles data must not hold the replacement back for ever).
common::Duration MigrationDeadline(uint64_t max_data) {
  return std::chrono::minutes(10) + std::chrono::seconds(max_data >> 20);
}

// Feeds each piece to the extractor on the pool, until `deadline`.
class ExtractSink : public ChunkSink {
 public:
  ExtractSink(allocdir::SnapshotExtractor& x, asio::thread_pool& pool, common::Clock& clock,
              common::Time deadline)
      : x_(x), pool_(pool), clock_(clock), deadline_(deadline) {}
  asio::awaitable<absl::Status> Write(std::string chunk) override {
    if (clock_.Now() > deadline_)
      co_return absl::DeadlineExceededError("the transfer took too long");
    auto feed = [x = &x_, chunk = std::move(chunk)] { return x->Feed(chunk); };
    co_return co_await common::Offload(pool_, std::move(feed));  // named: see Offload
  }

 private:
  allocdir::SnapshotExtractor& x_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  common::Time deadline_;
};

class Remote : public PrevAllocWatcher {
 public:
  Remote(RemotePrevAlloc prev, common::Clock& clock, asio::thread_pool& pool)
      : prev_(std::move(prev)), clock_(clock), pool_(pool) {}

  asio::awaitable<absl::Status> Wait(common::CancellationScopePtr cancel) override {
    if (done_waiting_)
      co_return absl::OkStatus();
    waiting_ = true;
    absl::Status result = co_await WaitLoop(cancel);
    waiting_ = false;
    done_waiting_ = result.ok();
    co_return result;
  }

  asio::awaitable<absl::Status> Migrate(allocdir::AllocDir& dest,
                                        const std::vector<std::string>& tasks) override {
    if (!prev_.migrate || !info_ || info_->gone)
      co_return absl::OkStatus();
    if (absl::Status s = Reachable(); !s.ok())
      co_return s;
    migrating_ = true;
    absl::Status s = co_await Pull(dest, tasks);
    migrating_ = false;
    co_return common::Annotate(s, "failed to migrate the data of previous allocation " +
                                      prev_.alloc_id + " from node " + info_->node_id);
  }

  bool IsWaiting() const override { return waiting_; }
  bool IsMigrating() const override { return migrating_; }

 private:
  asio::awaitable<absl::Status> WaitLoop(const common::CancellationScopePtr& cancel) {
    uint64_t index = 0;
    common::Duration backoff = kFirstBackoff;
    for (;;) {
      auto r = co_await (prev_.query(index, kQueryWait) || cancel->Wait());
      if (r.index() == 1)
        co_return absl::CancelledError("stopped while waiting for previous allocation " +
                                       prev_.alloc_id);
      absl::StatusOr<PrevAllocInfo>& got = std::get<0>(r);
      if (got.ok()) {
        info_ = std::move(*got);
        if (info_->done)
          co_return absl::OkStatus();
        index = std::max(index, info_->index);
        backoff = kFirstBackoff;
        continue;
      }
      if (Refusal(got.status())) {
        // As in Nomad: nothing to wait for or migrate that this node may know of.
        DROVER_LOG_INFO("previous allocation {}: {}; not waiting for it", prev_.alloc_id,
                        got.status().ToString());
        info_.reset();
        co_return absl::OkStatus();
      }
      DROVER_LOG_WARN("previous allocation {}: {}; retrying in {} s", prev_.alloc_id,
                      got.status().ToString(),
                      std::chrono::duration_cast<std::chrono::seconds>(backoff).count());
      auto slept = co_await (clock_.Sleep(backoff) || cancel->Wait());
      if (slept.index() == 1)
        co_return absl::CancelledError("stopped while waiting for previous allocation " +
                                       prev_.alloc_id);
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }

  // Why the data cannot be pulled, if it cannot.
  absl::Status Reachable() const {
    const PrevAllocInfo& i = *info_;
    if (i.node_status.empty())
      return absl::FailedPreconditionError("node " + i.node_id + " of previous allocation " +
                                           i.alloc_id + " is gone");
    if (i.node_status == "down")
      return absl::FailedPreconditionError("node " + i.node_id + " of previous allocation " +
                                           i.alloc_id + " is down");
    if (i.client_status == "lost" || i.client_status == "unknown")
      return absl::FailedPreconditionError("previous allocation " + i.alloc_id + " is " +
                                           i.client_status);
    if (i.node_http_addr.empty() || i.migrate_token.empty())
      return absl::FailedPreconditionError(
          "node " + i.node_id + " serves no snapshot of previous allocation " + i.alloc_id);
    if (prev_.fetcher == nullptr)
      return absl::FailedPreconditionError("this agent cannot reach other nodes");
    return absl::OkStatus();
  }

  asio::awaitable<absl::Status> Pull(allocdir::AllocDir& dest,
                                     const std::vector<std::string>& tasks) {
    auto open = [d = &dest, id = prev_.alloc_id, tasks, max = prev_.max_data] {
      return allocdir::SnapshotExtractor::Open(*d, id, tasks, max);
    };
    absl::StatusOr<std::unique_ptr<allocdir::SnapshotExtractor>> x =
        co_await common::Offload(pool_, std::move(open));  // named: see Offload
    if (!x.ok())
      co_return x.status();
    ExtractSink sink(**x, pool_, clock_,
                     common::AddSaturating(clock_.Now(), MigrationDeadline(prev_.max_data)));
    const uint64_t max_body =
        prev_.max_data + std::min(prev_.max_data, kArchiveOverhead) + (1 << 20);
    absl::Status fetched = co_await prev_.fetcher->Fetch(info_->node_http_addr, prev_.alloc_id,
                                                         info_->migrate_token, max_body, sink);
    allocdir::SnapshotExtractor* raw = x->get();
    auto finish = [raw] { return raw->Finish(); };
    absl::Status finished = co_await common::Offload(pool_, std::move(finish));  // named
    if (!fetched.ok())
      co_return fetched;
    if (finished.ok())
      DROVER_LOG_INFO("migrated {} bytes in {} entries from previous allocation {} on node {}",
                      raw->data_bytes(), raw->entries(), prev_.alloc_id, info_->node_id);
    co_return finished;
  }

  RemotePrevAlloc prev_;
  common::Clock& clock_;
  asio::thread_pool& pool_;
  std::optional<PrevAllocInfo> info_;
  bool waiting_ = false;
  bool done_waiting_ = false;
  bool migrating_ = false;
};

}  // namespace

std::unique_ptr<PrevAllocWatcher> RemoteWatcher(RemotePrevAlloc prev, common::Clock& clock,
                                                asio::thread_pool& pool) {
  return std::make_unique<Remote>(std::move(prev), clock, pool);
}

}  // namespace drover::allocwatcher
