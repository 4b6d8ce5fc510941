// Calls into a device plugin from the control loop: the call runs on a thread pool and
// the caller waits for it at most `deadline`. A call that misses its deadline is
// abandoned, not cancelled (a blocking plugin call cannot be interrupted): its result
// is dropped when it eventually arrives, and the caller carries on at once.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/event.h"
#include "common/offload.h"

namespace drover::devices {

// Calls of one plugin that missed their deadline and have not returned yet.
using StuckCalls = std::shared_ptr<std::atomic<int>>;

// nullopt when the deadline passed or `stop` was cancelled first; the call is then
// counted in `stuck` until it returns. An exception thrown by `fn` becomes an Internal
// error. `fn` must own what it uses (the caller may be gone when it runs).
template <typename T>
asio::awaitable<std::optional<absl::StatusOr<T>>> CallWithDeadline(
    asio::thread_pool& pool, common::Clock& clock, common::Duration deadline,
    common::CancellationScope& stop, StuckCalls stuck, std::function<absl::StatusOr<T>()> fn) {
  enum : int { kRunning, kFinished, kAbandoned };
  struct Shared {
    explicit Shared(asio::any_io_executor ex) : done(std::move(ex)) {}
    std::optional<absl::StatusOr<T>> result;
    common::Event done;
    std::atomic<int> state{kRunning};
  };
  auto executor = co_await asio::this_coro::executor;
  auto shared = std::make_shared<Shared>(executor);
  auto guarded = [fn = std::move(fn), shared, stuck]() -> absl::StatusOr<T> {
    absl::StatusOr<T> r = absl::InternalError("device plugin call did not run");
    try {
      r = fn();
    } catch (const std::exception& e) {
      r = absl::InternalError(std::string("device plugin threw: ") + e.what());
    }
    if (shared->state.exchange(kFinished) == kAbandoned)
      stuck->fetch_sub(1);
    return r;
  };
  auto run = [](asio::thread_pool& p, std::shared_ptr<Shared> s,
                decltype(guarded) work) -> asio::awaitable<void> {
    s->result = co_await common::Offload(p, std::move(work));
    s->done.Set();
  };
  common::SpawnDetached(executor, run(pool, shared, std::move(guarded)), "device plugin call");
  using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
  auto wait = shared->done.Wait();
  auto timeout = clock.Sleep(deadline);
  auto stopped = stop.Wait();
  co_await (std::move(wait) || std::move(timeout) || std::move(stopped));
  if (shared->done.IsSet())
    co_return std::move(shared->result);
  int expected = kRunning;
  if (shared->state.compare_exchange_strong(expected, kAbandoned))
    stuck->fetch_add(1);
  co_return std::nullopt;
}

}  // namespace drover::devices
