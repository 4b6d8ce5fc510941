// A first-come, first-served counting semaphore for coroutines on one executor (the
// control loop): Acquire() completes once the caller holds one of its permits, and the
// Permit it returns gives it back. For bounding how many runs of a sequence of steps,
// with co_awaits between them, are in progress at once. Not thread-safe.
//
// Permits may outlive the semaphore (coroutine frames are destroyed with the
// io_context, after the objects of the scope that ran it): releasing one then does
// nothing.
#pragma once

#include <deque>
#include <memory>

#include "common/asio.h"
#include "common/event.h"

namespace drover::common {

class AsyncSemaphore {
  struct State {
    int available = 0;
    bool gone = false;  // the semaphore was destroyed
    std::deque<std::shared_ptr<Event>> waiters;
  };

 public:
  // `permits` >= 1.
  AsyncSemaphore(asio::any_io_executor executor, int permits);
  ~AsyncSemaphore();
  AsyncSemaphore(const AsyncSemaphore&) = delete;
  AsyncSemaphore& operator=(const AsyncSemaphore&) = delete;

  class Permit {
   public:
    Permit() = default;
    explicit Permit(std::shared_ptr<State> s) : s_(std::move(s)) {}
    Permit(Permit&& other) noexcept = default;
    Permit& operator=(Permit&& other) noexcept {
      if (this != &other) {
        Release();
        s_ = std::move(other.s_);
      }
      return *this;
    }
    ~Permit() { Release(); }
    // Gives the permit back now (a no-op for an empty or released one).
    void Release() {
      if (s_ != nullptr)
        GiveBack(*std::exchange(s_, nullptr));
    }

   private:
    std::shared_ptr<State> s_;
  };

  // Cancellable while waiting: a cancelled waiter leaves the queue (and passes the
  // permit on if it was handed over at that moment).
  asio::awaitable<Permit> Acquire();
  int available() const { return state_->available; }
  size_t waiting() const { return state_->waiters.size(); }

 private:
  static void GiveBack(State& s);

  asio::any_io_executor executor_;
  std::shared_ptr<State> state_;
};

}  // namespace drover::common
