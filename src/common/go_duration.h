// Go's time.ParseDuration syntax ("300ms", "1h30m", "2.5s"), used by Nomad for `wait`
// query parameters and by the mock driver's config.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

#include "common/clock.h"

namespace drover::common {

absl::StatusOr<Duration> ParseGoDuration(std::string_view text);

}  // namespace drover::common
