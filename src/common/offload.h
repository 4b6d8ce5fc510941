// Runs blocking work on the blocking pool and resumes the caller on its own executor
// (the control loop) with the result. Exceptions thrown by `fn` propagate to the
// caller. Use for file-system work, heavy encoding and scheduler passes — anything that
// must not stall the control loop.
#pragma once

#include <type_traits>
#include <utility>

#include "common/asio.h"

namespace drover::common {

template <typename Fn>
asio::awaitable<std::invoke_result_t<Fn>> Offload(asio::thread_pool& pool, Fn fn) {
  using R = std::invoke_result_t<Fn>;
  co_return co_await asio::co_spawn(
      pool.get_executor(),
      [fn = std::move(fn)]() mutable -> asio::awaitable<R> {
        if constexpr (std::is_void_v<R>) {
          fn();
          co_return;
        } else {
          co_return fn();
        }
      },
      asio::use_awaitable);
}

// Spawns `task` on `executor`, detached; an escaping exception is logged with `what`
// instead of terminating the process.
void SpawnDetached(asio::any_io_executor executor, asio::awaitable<void> task,
                   std::string what);

}  // namespace drover::common
