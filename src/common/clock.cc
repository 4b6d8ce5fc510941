#include "common/clock.h"

#include <algorithm>

namespace drover::common {
namespace {

bool Cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

}  // namespace

Time RealClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

asio::awaitable<void> RealClock::Sleep(Duration d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

FakeClock::FakeClock(Time start) : now_(start) {}

asio::awaitable<void> FakeClock::Sleep(Duration d) {
  asio::steady_timer timer(co_await asio::this_coro::executor,
                           asio::steady_timer::time_point::max());
  Sleeper sleeper{now_ + d, &timer};
  sleepers_.insert(&sleeper);
  struct Unregister {
    std::set<Sleeper*>& set;
    Sleeper* s;
    ~Unregister() { set.erase(s); }
  } unregister{sleepers_, &sleeper};
  while (now_ < sleeper.deadline) {
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (Cancelled(co_await asio::this_coro::cancellation_state)) {
      co_return;
    }
  }
}

void FakeClock::Advance(Duration d) {
  now_ += d;
  for (Sleeper* s : sleepers_) {
    if (s->deadline <= now_) {
      s->timer->cancel();
    }
  }
}

Time FakeClock::NextDeadline() const {
  Time next = Time::max();
  for (const Sleeper* s : sleepers_) {
    next = std::min(next, s->deadline);
  }
  return next;
}

}  // namespace drover::common
