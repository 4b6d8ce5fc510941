// The generic scheduler for service and batch jobs: reconciles a job's desired task
// groups against its existing allocations and places what is missing with feasibility
// checks (datacenter, node pool, drivers, constraints) and bin-packing on cpu, memory,
// disk and ports; and the system scheduler, one allocation per node. A pure function of its input,
// so the server can run it on the blocking pool against an immutable snapshot and apply the plan on
// the control loop.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/job_diff.h"
#include "server/state_store.h"

namespace drover::server {

struct SchedulerInput {
  model::Evaluation eval;
  JobPtr job;  // null when the job was purged
  std::vector<NodePtr> nodes;
  std::vector<AllocPtr> job_allocs;        // every allocation of the job
  std::vector<AllocPtr> node_allocs;       // every allocation on any node (for resource use)
  std::vector<DeploymentPtr> deployments;  // the job's, newest first
  common::Time now{};
  uint64_t seed = 0;  // for dynamic port choice; fixed in tests
  // The scheduler configuration's memory_oversubscription_enabled: without it a task's
  // memory_max is ignored (its hard limit is its memory), as in Nomad.
  bool memory_oversubscription = false;
  // Scores every feasible node for each placement instead of the best of a few (the
  // benchmark's naive baseline; never set by the server otherwise).
  bool score_every_node = false;
};

struct PlanResult {
  // New allocations, in-place updates and stops (desired status changed), all to be
  // upserted together.
  std::vector<model::Allocation> upserts;
  int placed = 0;
  int stopped = 0;
  int lost = 0;     // on a node that is down (or gone): stopped, marked lost, and replaced
  int unknown = 0;  // on a disconnected node, within max_client_disconnect: replaced
  int updated_in_place = 0;
  std::map<std::string, model::AllocMetric> failed_tg_allocs;
  std::map<std::string, int> queued;
  // Per task group, what the pass decided for its allocations (a plan's annotations):
  // kept as they are, placed, migrated, stopped, updated in place, or replaced for a
  // new version. Decisions, counted whether or not a placement then fits.
  std::map<std::string, model::DesiredUpdates> desired_tg_updates;
  // Evaluations to run later: failed allocations to replace once their reschedule
  // delay has passed (WaitUntil).
  std::vector<model::Evaluation> followup_evals;

  // Deployments (rollout.h). The deployment this pass worked for (empty: none), and
  // what of it to store: a new deployment, or the groups' desired counts and states of
  // the current one (the state store keeps the counters), set when changed.
  std::string deployment_id;
  std::optional<model::Deployment> deployment;
  // Status changes: older deployments cancelled, the current one successful, or its
  // description changed (waiting for promotion).
  struct DeploymentUpdate {
    std::string id;
    std::string status;
    std::string description;
  };
  std::vector<DeploymentUpdate> deployment_updates;
};

// Dispatches on the job's type: system and sysbatch jobs go to ScheduleSystem.
PlanResult Schedule(const SchedulerInput& input);
// One allocation of each group per node that serves the job (system_scheduler.cc).
// REQUIRES: input.job is a system or sysbatch job that is not stopped.
PlanResult ScheduleSystem(const SchedulerInput& input);

inline constexpr char kAllocNotNeeded[] = "alloc not needed due to job update";
inline constexpr char kAllocUpdating[] = "alloc is being updated due to job update";
inline constexpr char kAllocMigrating[] = "alloc is being migrated";
inline constexpr char kAllocRescheduled[] = "alloc was rescheduled because it failed";
inline constexpr char kAllocLost[] = "alloc is lost since its node is down";
inline constexpr char kAllocUnknown[] = "alloc is unknown since its node is disconnected";
inline constexpr char kAllocReconnected[] =
    "alloc not needed since the allocation it replaced has reconnected";

}  // namespace drover::server
