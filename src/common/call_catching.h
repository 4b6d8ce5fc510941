// Awaits a call into code we do not trust to keep our error discipline (hooks,
// plugins): an exception it throws becomes an Internal error instead of unwinding
// through the caller's coroutine and leaving it half-way through a phase.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"

#include "common/asio.h"

namespace drover::common {

// `fn()` returns asio::awaitable<absl::Status>. Pass `fn` as a named variable (see
// Offload() for the GCC 12 reason).
template <typename Fn>
asio::awaitable<absl::Status> CallCatching(Fn fn) {
  try {
    co_return co_await fn();
  } catch (const std::exception& e) {
    co_return absl::InternalError(std::string("hook threw: ") + e.what());
  }
}

}  // namespace drover::common
