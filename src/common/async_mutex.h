// A first-come, first-served lock for coroutines on one executor (the control loop):
// Lock() completes once the caller holds it, and the Guard it returns releases it.
// For a sequence of steps with co_awaits between them that must not interleave with
// another run of the same sequence. Not thread-safe.
#pragma once

#include <deque>
#include <memory>

#include "common/asio.h"
#include "common/event.h"

namespace drover::common {

class AsyncMutex {
 public:
  explicit AsyncMutex(asio::any_io_executor executor) : executor_(std::move(executor)) {}
  AsyncMutex(const AsyncMutex&) = delete;
  AsyncMutex& operator=(const AsyncMutex&) = delete;

  class Guard {
   public:
    Guard() = default;
    explicit Guard(AsyncMutex* m) : m_(m) {}
    Guard(Guard&& other) noexcept : m_(std::exchange(other.m_, nullptr)) {}
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        Release();
        m_ = std::exchange(other.m_, nullptr);
      }
      return *this;
    }
    ~Guard() { Release(); }

   private:
    void Release() {
      if (m_ != nullptr)
        std::exchange(m_, nullptr)->Unlock();
    }
    AsyncMutex* m_ = nullptr;
  };

  // Cancellable while waiting: a cancelled waiter leaves the queue (and passes the lock
  // on if it was handed over at that moment).
  asio::awaitable<Guard> Lock();
  bool locked() const { return locked_; }

 private:
  void Unlock();

  asio::any_io_executor executor_;
  bool locked_ = false;
  std::deque<std::shared_ptr<Event>> waiters_;
};

}  // namespace drover::common
