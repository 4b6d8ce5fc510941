// A container's resource usage from the Engine API's stats (GET
// /containers/:id/stats?stream=false), as Nomad's docker driver reports it: memory RSS,
// cache, swap, usage and max usage (cgroup v1 names, or v2's anon and file); CPU
// percent of one core between the sample and the one before, split into user and
// kernel time, and throttling.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "codec/json.h"
#include "model/usage.h"

namespace drover::drivers::docker {

// `cores`: the machine's, as Docker's own percentage counts them.
absl::StatusOr<model::TaskResourceUsage> UsageFromStats(const codec::Json& stats, int cores,
                                                        int64_t now_nanos);

}  // namespace drover::drivers::docker
