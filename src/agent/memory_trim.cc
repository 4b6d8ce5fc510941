#include "agent/memory_trim.h"

#include "common/heap.h"
#include "common/offload.h"

namespace drover::agent {

void MemoryTrimmer::Start() {
  stop_ = common::CancellationScope::Create(executor_);
  common::SpawnDetached(executor_, Loop(stop_), "memory trim");
}

void MemoryTrimmer::Stop() {
  if (stop_ != nullptr)
    stop_->Cancel();
}

asio::awaitable<void> MemoryTrimmer::Loop(common::CancellationScopePtr stop) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT
  while (!stop->cancelled()) {
    co_await (clock_.Sleep(interval_) || stop->Wait());
    if (stop->cancelled())
      break;
    auto trim = [] {
      common::ReleaseFreeHeap();
      return 0;
    };  // named: see Offload()
    co_await common::Offload(pool_, std::move(trim));
  }
}

}  // namespace drover::agent
