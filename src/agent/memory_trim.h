// Hands the heap's free pages back to the kernel every interval (common::ReleaseFreeHeap:
// glibc's malloc_trim, or a purge of jemalloc's arenas). glibc keeps what a burst or a
// large answer freed: 20 listings of 1,000 allocations left the agent 42 MiB larger, all
// of it free memory that a trim returned. jemalloc returns freed pages on its own after
// its decay time; the purge catches what an idle agent's allocator has not got round
// to. The trim runs on the pool, off the control loop.
#pragma once

#include "common/asio.h"
#include "common/cancellation.h"
#include "common/clock.h"

namespace drover::agent {

class MemoryTrimmer {
 public:
  MemoryTrimmer(asio::any_io_executor executor, asio::thread_pool& pool, common::Clock& clock,
                common::Duration interval = std::chrono::seconds(30))
      : executor_(std::move(executor)), pool_(pool), clock_(clock), interval_(interval) {}
  void Start();
  void Stop();

 private:
  asio::awaitable<void> Loop(common::CancellationScopePtr stop);

  asio::any_io_executor executor_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  common::Duration interval_;
  common::CancellationScopePtr stop_;
};

}  // namespace drover::agent
