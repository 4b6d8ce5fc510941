#include "common/async_mutex.h"

#include <algorithm>

namespace drover::common {

asio::awaitable<AsyncMutex::Guard> AsyncMutex::Lock() {
  if (!locked_) {
    locked_ = true;
    co_return Guard(this);
  }
  auto turn = std::make_shared<Event>(executor_);
  waiters_.push_back(turn);
  try {
    co_await turn->Wait();
  } catch (...) {
    if (auto it = std::find(waiters_.begin(), waiters_.end(), turn); it != waiters_.end())
      waiters_.erase(it);
    else if (turn->IsSet())
      Unlock();  // it was ours already: pass it on
    throw;
  }
  co_return Guard(this);  // Unlock handed it over with locked_ still true
}

void AsyncMutex::Unlock() {
  if (waiters_.empty()) {
    locked_ = false;
    return;
  }
  std::shared_ptr<Event> next = std::move(waiters_.front());
  waiters_.pop_front();
  next->Set();
}

}  // namespace drover::common
