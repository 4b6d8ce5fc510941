#include "common/offload.h"

#include <exception>
#include <string>

#include "common/logging.h"

namespace drover::common {

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
