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

namespace internal {

// The state a call shares with its pool thread. Kept out of CallWithDeadline: GCC 12
// crashes on local types and coroutine lambdas inside a coroutine template.
enum : int { kCallRunning, kCallFinished, kCallAbandoned };

template <typename T>
struct CallShared {
  explicit CallShared(asio::any_io_executor ex) : done(std::move(ex)) {}
  std::optional<absl::StatusOr<T>> result;
  common::Event done;
  std::atomic<int> state{kCallRunning};
};

template <typename T>
absl::StatusOr<T> GuardedCall(const std::function<absl::StatusOr<T>()>& fn,
                              const std::shared_ptr<CallShared<T>>& shared,
                              const StuckCalls& stuck) {
  absl::StatusOr<T> r = absl::InternalError("device plugin call did not run");
  try {
    r = fn();
  } catch (const std::exception& e) {
    r = absl::InternalError(std::string("device plugin threw: ") + e.what());
  }
  if (shared->state.exchange(kCallFinished) == kCallAbandoned)
    stuck->fetch_sub(1);
  return r;
}

template <typename T>
asio::awaitable<void> RunCall(asio::thread_pool& pool, std::shared_ptr<CallShared<T>> shared,
                              std::function<absl::StatusOr<T>()> work) {
  shared->result = co_await common::Offload(pool, std::move(work));
  shared->done.Set();
}

}  // namespace internal

// nullopt when the deadline passed or `stop` was cancelled first; the call is then
// counted in `stuck` until it returns. An exception thrown by `fn` becomes an Internal
// error. `fn` must own what it uses (the caller may be gone when it runs).
template <typename T>
asio::awaitable<std::optional<absl::StatusOr<T>>> CallWithDeadline(
    asio::thread_pool& pool, common::Clock& clock, common::Duration deadline,
    common::CancellationScope& stop, StuckCalls stuck, std::function<absl::StatusOr<T>()> fn) {
  auto executor = co_await asio::this_coro::executor;
  auto shared = std::make_shared<internal::CallShared<T>>(executor);
  std::function<absl::StatusOr<T>()> guarded = [fn = std::move(fn), shared, stuck] {
    return internal::GuardedCall<T>(fn, shared, stuck);
  };
  common::SpawnDetached(executor, internal::RunCall<T>(pool, shared, std::move(guarded)),
                        "device plugin call");
  using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)
  auto wait = shared->done.Wait();
  auto timeout = clock.Sleep(deadline);
  auto stopped = stop.Wait();
  co_await (std::move(wait) || std::move(timeout) || std::move(stopped));
  if (shared->done.IsSet())
    co_return std::move(shared->result);
  int expected = internal::kCallRunning;
  if (shared->state.compare_exchange_strong(expected, internal::kCallAbandoned))
    stuck->fetch_add(1);
  co_return std::nullopt;
}

}  // namespace drover::devices
