// The node drainer's decisions (Nomad's drainer, restated): which allocations on
// draining nodes to migrate now, and which drains are done. A pure function of the
// state, so that the server's drain loop only applies what it returns.
//
// - Service allocations move as their group's migrate block allows: at most
//   max_parallel of the group may be on the way at once, counted as the group's count
//   less its healthy allocations (running, and reported healthy by their client).
//   A replacement must turn healthy before the next allocation moves.
// - Batch allocations are left to finish; they are moved only at the deadline.
// - System and sysbatch allocations are stopped last, once nothing else is left on the
//   node, unless the drain ignores system jobs.
// - At the force deadline (at once for a negative deadline), everything left moves.
// - A drain is complete when no allocation on the node is still meant to run (system
//   ones aside, when ignored).
#pragma once

#include <optional>
#include <vector>

#include "server/state_store.h"

namespace drover::server {

struct DrainPlan {
  std::vector<AllocPtr> migrate;  // to mark for migration now
  // Marked earlier and still meant to run: their job's evaluation has not stopped them
  // (it failed, or was lost with a crash); the server evaluates the job again.
  std::vector<AllocPtr> marked;
  std::vector<NodePtr> complete;              // drains with nothing left to move
  std::optional<common::Time> next_deadline;  // the earliest force deadline still ahead
};

// REQUIRES: every node in `draining` has a drain strategy.
DrainPlan PlanDrain(const StateStore& state, const std::vector<NodePtr>& draining,
                    common::Time now);

}  // namespace drover::server
