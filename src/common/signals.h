// Signal names as Nomad's job specs use them ("SIGTERM", "TERM", "15").
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace drover::common {

// "SIGTERM", "term", "15" → 15. InvalidArgument for unknown names and numbers outside
// 1..64.
absl::StatusOr<int> ParseSignal(std::string_view name);
// 15 → "SIGTERM"; unknown numbers as decimal text.
std::string SignalName(int signal);

}  // namespace drover::common
