// A first-come, first-served lock for coroutines on one executor (the control loop):
// Lock() completes once the caller holds it, and the Guard it returns releases it.
// For a sequence of steps with co_awaits between them that must not interleave with
// another run of the same sequence. Not thread-safe. An AsyncSemaphore of one permit;
// its Guards may outlive it as Permits may.
#pragma once

#include "common/async_semaphore.h"

namespace drover::common {

class AsyncMutex {
 public:
  using Guard = AsyncSemaphore::Permit;

  explicit AsyncMutex(asio::any_io_executor executor) : permits_(std::move(executor), 1) {}

  // Cancellable while waiting, as AsyncSemaphore::Acquire.
  asio::awaitable<Guard> Lock() { return permits_.Acquire(); }
  bool locked() const { return permits_.available() == 0; }

 private:
  AsyncSemaphore permits_;
};

}  // namespace drover::common
