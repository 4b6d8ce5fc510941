// Process exit codes of the CLI, as Nomad's: 0 success, 1 any error, 2 when a monitored
// evaluation could not place every allocation.
#pragma once

namespace drover::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitPlacementFailure = 2;

}  // namespace drover::cli
