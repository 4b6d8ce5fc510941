#include "drivers/driver.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"

namespace drover::drivers {
namespace {

constexpr char kRecoverablePayload[] = "drover.dev/recoverable";

}  // namespace

absl::Status RecoverableError(std::string_view message) {
  absl::Status s = absl::UnavailableError(std::string(message));
  s.SetPayload(kRecoverablePayload, absl::Cord("true"));
  return s;
}

bool IsRecoverable(const absl::Status& status) {
  return status.GetPayload(kRecoverablePayload).has_value();
}

}  // namespace drover::drivers
