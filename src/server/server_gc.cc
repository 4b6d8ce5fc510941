// The leader's garbage collection (core_gc.h): every gc_interval, and on demand.
#include "common/logging.h"
#include "server/server.h"

namespace drover::server {

asio::awaitable<absl::StatusOr<Garbage>> Server::CollectGarbage(GcThresholds thresholds) {
  // One durable write at a time: what goes must not race a write that is undone.
  auto guard = co_await durable_writes_.Lock();
  if (!leader_)
    co_return NotLeaderError();
  Garbage garbage = FindGarbage(state_, thresholds, clock_.Now());
  if (garbage.empty())
    co_return garbage;
  state_.Remove(garbage);
  // (Nothing to undo when this fails: what went is gone from memory, and a record left
  // on disk is collected again after a restart.)
  if (absl::Status s = co_await state_.Flush(); !s.ok())
    co_return s;
  DROVER_LOG_INFO(
      "server: garbage collection removed {} allocations, {} evaluations, {} jobs, "
      "{} nodes",
      garbage.allocs.size(), garbage.evals.size(), garbage.jobs.size(), garbage.nodes.size());
  co_return garbage;
}

asio::awaitable<absl::Status> Server::CollectGarbageDurably() {
  absl::StatusOr<Garbage> done = co_await CollectGarbage(GcThresholds::Forced());
  co_return done.status();
}

asio::awaitable<void> Server::GcLoop(common::CancellationScopePtr term) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
  while (!term->cancelled()) {
    co_await (clock_.Sleep(config_.gc_interval) || term->Wait());
    if (term->cancelled())
      break;
    absl::StatusOr<Garbage> done = co_await CollectGarbage(config_.gc);
    if (!done.ok())
      DROVER_LOG_WARN("server: garbage collection failed: {}", done.status().ToString());
  }
}

}  // namespace drover::server
