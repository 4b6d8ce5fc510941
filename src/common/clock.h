// Time for everything that schedules or stamps: the real clock in production, a
// fake one in tests. Sleep() is a coroutine on the caller's executor, so runner code
// that sleeps (restart delays, kill timeouts) is driven by FakeClock::Advance() in
// tests with no real waiting.
//
// Thread-safety: RealClock is thread-safe. FakeClock must be used from the thread
// running the io_context its sleepers are on (the control loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <set>

#include "common/asio.h"

namespace drover::common {

using Duration = std::chrono::nanoseconds;
// Wall-clock time at nanosecond resolution. The epoch (count 0) means "unset".
using Time = std::chrono::time_point<std::chrono::system_clock, Duration>;

inline int64_t ToUnixNanos(Time t) {
  return t.time_since_epoch().count();
}
inline Time FromUnixNanos(int64_t ns) {
  return Time(Duration(ns));
}
// t + d for a non-negative d, held at the end of time instead of overflowing (a
// user's deadline of centuries).
inline Time AddSaturating(Time t, Duration d) {
  if (d > Time::max() - t)
    return Time::max();
  return t + d;
}

class Clock {
 public:
  virtual ~Clock() = default;
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;

  virtual Time Now() const = 0;
  // Completes after `d` has elapsed on this clock. Honors asio cancellation (e.g. when
  // raced with `||`): a cancelled sleep completes early without error.
  virtual asio::awaitable<void> Sleep(Duration d) = 0;
};

class RealClock final : public Clock {
 public:
  Time Now() const override;
  asio::awaitable<void> Sleep(Duration d) override;
};

// Time moves only through Advance(). Sleepers whose deadline is reached are woken.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Time start = FromUnixNanos(1'700'000'000'000'000'000));
  Time Now() const override { return now_; }
  asio::awaitable<void> Sleep(Duration d) override;

  void Advance(Duration d);
  // Number of coroutines currently sleeping on this clock.
  size_t sleepers() const { return sleepers_.size(); }
  // The earliest pending deadline, or Time::max() when nobody sleeps.
  Time NextDeadline() const;

 private:
  struct Sleeper {
    Time deadline;
    asio::steady_timer* timer;
  };
  Time now_;
  std::set<Sleeper*> sleepers_;
};

}  // namespace drover::common
