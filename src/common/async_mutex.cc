#include "common/async_mutex.h"

#include <algorithm>

namespace drover::common {

asio::awaitable<AsyncMutex::Guard> AsyncMutex::Lock() {
  // The frame keeps the state, not the mutex: it may be resumed (or destroyed) later.
  std::shared_ptr<State> s = state_;
  if (!s->locked) {
    s->locked = true;
    co_return Guard(s);
  }
  auto turn = std::make_shared<Event>(executor_);
  s->waiters.push_back(turn);
  try {
    co_await turn->Wait();
  } catch (...) {
    if (auto it = std::find(s->waiters.begin(), s->waiters.end(), turn); it != s->waiters.end())
      s->waiters.erase(it);
    else if (turn->IsSet())
      Unlock(*s);  // it was ours already: pass it on
    throw;
  }
  co_return Guard(s);  // Unlock handed it over with locked still true
}

void AsyncMutex::Unlock(State& s) {
  if (s.gone)
    return;
  if (s.waiters.empty()) {
    s.locked = false;
    return;
  }
  std::shared_ptr<Event> next = std::move(s.waiters.front());
  s.waiters.pop_front();
  next->Set();
}

}  // namespace drover::common
