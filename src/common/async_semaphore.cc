#include "common/async_semaphore.h"

#include <algorithm>

namespace drover::common {

AsyncSemaphore::AsyncSemaphore(asio::any_io_executor executor, int permits)
    : executor_(std::move(executor)), state_(std::make_shared<State>()) {
  state_->available = std::max(permits, 1);
}

AsyncSemaphore::~AsyncSemaphore() {
  state_->gone = true;
  state_->waiters.clear();
}

asio::awaitable<AsyncSemaphore::Permit> AsyncSemaphore::Acquire() {
  // The frame keeps the state, not the semaphore: it may be resumed (or destroyed)
  // later.
  std::shared_ptr<State> s = state_;
  if (s->available > 0 && s->waiters.empty()) {
    --s->available;
    co_return Permit(s);
  }
  auto turn = std::make_shared<Event>(executor_);
  s->waiters.push_back(turn);
  try {
    co_await turn->Wait();
  } catch (...) {
    if (auto it = std::find(s->waiters.begin(), s->waiters.end(), turn); it != s->waiters.end())
      s->waiters.erase(it);
    else if (turn->IsSet())
      GiveBack(*s);  // it was ours already: pass it on
    throw;
  }
  co_return Permit(s);  // GiveBack handed it over without counting it as available
}

void AsyncSemaphore::GiveBack(State& s) {
  if (s.gone)
    return;
  if (s.waiters.empty()) {
    ++s.available;
    return;
  }
  std::shared_ptr<Event> next = std::move(s.waiters.front());
  s.waiters.pop_front();
  next->Set();
}

}  // namespace drover::common
