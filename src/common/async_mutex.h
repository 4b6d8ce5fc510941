// A first-come, first-served lock for coroutines on one executor (the control loop):
// Lock() completes once the caller holds it, and the Guard it returns releases it.
// For a sequence of steps with co_awaits between them that must not interleave with
// another run of the same sequence. Not thread-safe.
//
// Guards may outlive the mutex (coroutine frames are destroyed with the io_context,
// after the objects of the scope that ran it): releasing one then does nothing.
#pragma once

#include <deque>
#include <memory>

#include "common/asio.h"
#include "common/event.h"

namespace drover::common {

class AsyncMutex {
  struct State {
    bool locked = false;
    bool gone = false;  // the mutex was destroyed
    std::deque<std::shared_ptr<Event>> waiters;
  };

 public:
  explicit AsyncMutex(asio::any_io_executor executor)
      : executor_(std::move(executor)), state_(std::make_shared<State>()) {}
  ~AsyncMutex() {
    state_->gone = true;
    state_->waiters.clear();
  }
  AsyncMutex(const AsyncMutex&) = delete;
  AsyncMutex& operator=(const AsyncMutex&) = delete;

  class Guard {
   public:
    Guard() = default;
    explicit Guard(std::shared_ptr<State> s) : s_(std::move(s)) {}
    Guard(Guard&& other) noexcept = default;
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        Release();
        s_ = std::move(other.s_);
      }
      return *this;
    }
    ~Guard() { Release(); }

   private:
    void Release() {
      if (s_ != nullptr)
        Unlock(*std::exchange(s_, nullptr));
    }
    std::shared_ptr<State> s_;
  };

  // Cancellable while waiting: a cancelled waiter leaves the queue (and passes the lock
  // on if it was handed over at that moment).
  asio::awaitable<Guard> Lock();
  bool locked() const { return state_->locked; }

 private:
  static void Unlock(State& s);

  asio::any_io_executor executor_;
  std::shared_ptr<State> state_;
};

}  // namespace drover::common
