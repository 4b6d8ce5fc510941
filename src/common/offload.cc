#include "common/offload.h"

#include <atomic>
#include <exception>
#include <string>

#include "common/logging.h"

namespace drover::common {
namespace {
std::atomic<int> offloads_in_flight{0};  // a gauge: no ordering with other data needed
}  // namespace

namespace internal {
void OffloadStarted() {
  offloads_in_flight.fetch_add(1, std::memory_order_relaxed);
}
void OffloadFinished() {
  offloads_in_flight.fetch_sub(1, std::memory_order_relaxed);
}
}  // namespace internal

int OffloadsInFlight() {
  return offloads_in_flight.load(std::memory_order_relaxed);
}

void SpawnDetached(asio::any_io_executor executor, asio::awaitable<void> task, std::string what) {
  asio::co_spawn(executor, std::move(task), [what = std::move(what)](std::exception_ptr e) {
    if (!e) {
      return;
    }
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      DROVER_LOG_ERROR("{} failed: {}", what, ex.what());
    } catch (...) {
      DROVER_LOG_ERROR("{} failed with a non-standard exception", what);
    }
  });
}

}  // namespace drover::common
