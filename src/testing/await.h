// Runs one coroutine to completion from a test, on the test's io_context.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <type_traits>

#include "absl/status/status.h"
#include <gtest/gtest.h>

#include "common/asio.h"
#include "testing/test_util.h"

namespace drover::testing {

// What `work` returns, once it completes on `io` (run here, with real time). When it
// takes longer than `timeout`: a test failure, and DeadlineExceeded for a Status or
// StatusOr (a value-initialized T otherwise).
template <typename T>
T Await(asio::io_context& io, asio::awaitable<T> work,
        std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto out = std::make_shared<std::optional<T>>();
  asio::co_spawn(
      io,
      [out, work = std::move(work)]() mutable -> asio::awaitable<void> {
        out->emplace(co_await std::move(work));
      },
      asio::detached);
  if (!RunUntil(
          io, [&] { return out->has_value(); }, timeout)) {
    ADD_FAILURE() << "the coroutine did not complete in time";
    if constexpr (std::is_constructible_v<T, absl::Status>)
      return T(absl::DeadlineExceededError("did not complete in time"));
    else
      return T{};
  }
  return std::move(**out);
}

}  // namespace drover::testing
