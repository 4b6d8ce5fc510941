// When a failed allocation is replaced, as its group's `reschedule` block says (Nomad's
// semantics): how many attempts within which interval (or unlimited), and after which
// delay, growing as "constant", "exponential" or "fibonacci" up to max_delay.
#pragma once

#include <optional>

#include "common/clock.h"
#include "model/allocation.h"
#include "model/job.h"

namespace drover::server {

struct RescheduleDecision {
  common::Time at{};  // when the replacement may be placed
  common::Duration delay{0};
};

// When the allocation failed: its tasks' last finish, else its last modification.
common::Time FailTime(const model::Allocation& alloc);

// For a failed allocation: when it may be replaced, or nothing when the policy allows
// no (more) attempts.
std::optional<RescheduleDecision> DecideReschedule(const model::Allocation& failed,
                                                   const model::ReschedulePolicy& policy);

// The tracker a replacement of `failed` carries: the events that still count (within
// the interval; the last few for an unlimited policy), then this replacement's.
model::RescheduleTracker NextTracker(const model::Allocation& failed,
                                     const model::ReschedulePolicy& policy, common::Time now,
                                     common::Duration delay);

}  // namespace drover::server
