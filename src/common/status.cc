#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/status_macros.h"

namespace drover::common {

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) {
    return status;
  }
  absl::Status out(status.code(), std::string(context) + ": " + std::string(status.message()));
  // Payloads carry meaning (e.g. a driver error being recoverable): keep them.
  status.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  return out;
}

namespace internal {
void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, cond);
  std::abort();
}
}  // namespace internal

}  // namespace drover::common
