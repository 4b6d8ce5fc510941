#include "client/allocrunner/group_shutdown_delay_hook.h"

#include "common/logging.h"

namespace drover::allocrunner {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

asio::awaitable<void> GroupShutdownDelayHook::PreKill() {
  // Once per allocation: a second kill (e.g. Destroy after a stop) must not wait again.
  if (waited_ || delay_.count() <= 0 || skip_->cancelled())
    co_return;
  waited_ = true;
  DROVER_LOG_DEBUG("waiting group shutdown_delay of {} ms before killing tasks",
                   std::chrono::duration_cast<std::chrono::milliseconds>(delay_).count());
  co_await (clock_.Sleep(delay_) || skip_->Wait());
}

}  // namespace drover::allocrunner
