#include "common/event.h"

namespace drover::common {

Event::Event(asio::any_io_executor executor)
    : timer_(executor, asio::steady_timer::time_point::max()) {}

void Event::Set() {
  if (!set_) {
    set_ = true;
    timer_.cancel();
  }
}

asio::awaitable<void> Event::Wait() {
  while (!set_) {
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

Notifier::Notifier(asio::any_io_executor executor)
    : timer_(executor, asio::steady_timer::time_point::max()) {}

void Notifier::Notify() {
  pending_ = true;
  timer_.cancel();
}

asio::awaitable<void> Notifier::Wait() {
  while (!pending_) {
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  pending_ = false;
}

}  // namespace drover::common
