// Calls into a device plugin from the control loop: the call runs on the blocking pool
// and the caller waits for it at most `deadline`. A call that misses its deadline is
// abandoned, not cancelled (a blocking plugin call cannot be interrupted): its result
// is dropped when it eventually arrives, and the caller carries on at once.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/clock.h"
#include "common/event.h"
#include "common/offload.h"

namespace drover::devices {

// nullopt when the deadline passed first. An exception thrown by `fn` becomes an
// Internal error. `fn` must own what it uses (the caller may be gone when it runs).
template <typename T>
asio::awaitable<std::optional<absl::StatusOr<T>>> CallWithDeadline(
    asio::thread_pool& pool, common::Clock& clock, common::Duration deadline,
    std::function<absl::StatusOr<T>()> fn) {
  struct Shared {
    explicit Shared(asio::any_io_executor ex) : done(std::move(ex)) {}
    std::optional<absl::StatusOr<T>> result;
    common::Event done;
  };
  auto executor = co_await asio::this_coro::executor;
  auto shared = std::make_shared<Shared>(executor);
  auto guarded = [fn = std::move(fn)]() -> absl::StatusOr<T> {
    try {
      return fn();
    } catch (const std::exception& e) {
      return absl::InternalError(std::string("device plugin threw: ") + e.what());
    }
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
  co_await (std::move(wait) || std::move(timeout));
  if (!shared->done.IsSet())
    co_return std::nullopt;
  co_return std::move(shared->result);
}

}  // namespace drover::devices
