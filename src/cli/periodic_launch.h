// When a periodic job launches next, as Nomad's CLI shows it (job run, job status, job
// plan).
#pragma once

#include <optional>
#include <string>

#include "codec/json.h"
#include "common/clock.h"

namespace drover::cli {

// The next launch after `now` of a job's `Periodic` block (API JSON), in its time zone,
// with how far off it is: "2026-12-03T10:00:00+01:00 (59m59s from now)" (Nomad's
// formatTime and formatTimeDifference). An error for a block whose crons or zone do not
// parse; nullopt when no launch is to come.
absl::StatusOr<std::optional<std::string>> NextLaunchText(const codec::Json& periodic,
                                                          common::Time now);

}  // namespace drover::cli
