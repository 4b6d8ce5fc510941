// Runs blocking work on the blocking pool and resumes the caller on its own executor
// (the control loop) with the result. Exceptions thrown by `fn` propagate to the
// caller. Use for file-system work, heavy encoding and scheduler passes — anything that
// must not stall the control loop.
//
// Pass `fn` as a named variable (std::move(work)), not a lambda temporary written
// inside the co_await expression: GCC 12 destroys such temporaries incorrectly
// (double free of their captures).
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "common/asio.h"

namespace drover::common {

namespace internal {
struct Unit {};
// Pool work started by Offload and not yet handed back. A process-wide gauge so that
// tests driving a fake clock can tell "idle" from "waiting for the pool".
void OffloadStarted();
void OffloadFinished();
// Counts one Offload as in flight from construction until the last copy of its
// completion is gone (run, or dropped with an io_context that never ran it).
class InFlight {
 public:
  InFlight() { OffloadStarted(); }
  InFlight(InFlight&& other) noexcept : active_(std::exchange(other.active_, false)) {}
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  InFlight& operator=(InFlight&&) = delete;
  ~InFlight() {
    if (active_)
      OffloadFinished();
  }

 private:
  bool active_ = true;
};
}  // namespace internal

// Number of Offload calls whose work has not yet been handed back to the caller.
int OffloadsInFlight();

template <typename Fn>
asio::awaitable<std::invoke_result_t<Fn>> Offload(asio::thread_pool& pool, Fn fn) {
  using R = std::invoke_result_t<Fn>;
  using Stored = std::conditional_t<std::is_void_v<R>, internal::Unit, R>;
  // Plain callbacks rather than a coroutine lambda: the work runs on the pool and the
  // completion is posted back to the caller's executor, where the coroutine resumes.
  auto home = co_await asio::this_coro::executor;
  auto token = asio::as_tuple(asio::use_awaitable);
  // Named, not a temporary inside the co_await expression (see above).
  auto initiation = [&pool, home](auto handler, Fn work) {
    asio::post(pool, [handler = std::move(handler), work = std::move(work), home,
                      in_flight = internal::InFlight()]() mutable {
      std::exception_ptr error;
      std::optional<Stored> result;
      try {
        if constexpr (std::is_void_v<R>) {
          work();
          result.emplace();
        } else {
          result.emplace(work());
        }
      } catch (...) {
        error = std::current_exception();
      }
      asio::post(home, [handler = std::move(handler), error, result = std::move(result),
                        in_flight = std::move(in_flight)]() mutable {
        std::move(handler)(error, std::move(result));
      });
    });
  };
  using Signature = void(std::exception_ptr, std::optional<Stored>);
  auto [error, result] = co_await asio::async_initiate<decltype(token), Signature>(
      std::move(initiation), token, std::move(fn));
  if (error) {
    std::rethrow_exception(error);
  }
  if constexpr (!std::is_void_v<R>) {
    co_return std::move(*result);
  }
}

// Spawns `task` on `executor`, detached; an escaping exception is logged with `what`
// instead of terminating the process.
void SpawnDetached(asio::any_io_executor executor, asio::awaitable<void> task, std::string what);

}  // namespace drover::common
