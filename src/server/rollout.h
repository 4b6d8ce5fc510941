// Deployments as the generic scheduler carries them out (Nomad's reconciler): for a
// service job whose groups have an update block, one scheduler pass sees the job's
// deployment, cancels those of older versions, limits destructive updates to
// max_parallel minus the deployment's allocations not yet healthy, places canaries
// before anything else is replaced, holds placements while the deployment is paused,
// failed or waiting for promotion, creates the deployment of a new version, and marks
// it successful once every group has all its allocations healthy.
//
// What is decided lands in PlanResult (deployment, deployment_updates); the server
// applies it (server.cc) and the deployment watcher (deployment_watcher.cc) acts on
// health, deadlines and promotion between passes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/scheduler.h"

namespace drover::server {

// What GroupReconciler decided for one rolling group, for Rollout::AttachGroup.
struct GroupOutcome {
  bool had_running = false;    // an allocation of the job's current version exists
  bool updating_spec = false;  // destructive or in-place updates were needed
  int pending = 0;             // updates, placements or canaries still to make
  int canaries_wanted = 0;     // canaries placed by this pass
};

class Rollout {
 public:
  // Cancels (in `plan`) the newest deployment when it is active and no longer for the
  // job's current version, or the job is stopped.
  Rollout(const SchedulerInput& in, PlanResult& plan);

  // Whether `g` rolls out through deployments: a service job's group with an update
  // block whose max_parallel is above 0.
  bool Rolling(const model::TaskGroup& g) const;
  // A canary that will never be promoted: of an older or failed deployment whose group
  // was not promoted. It is stopped.
  bool StaleCanary(const model::Allocation& a) const;
  // A canary of the active deployment that waits for promotion: it holds no slot.
  bool PendingCanary(const model::Allocation& a) const;
  // A canary of the current deployment (promoted or not): it keeps its slot ahead of
  // the allocation it was placed beside.
  bool CurrentCanary(const model::Allocation& a) const;
  // Whether the reschedule policy may replace `a`: a failed allocation unless its
  // deployment decides for it (it failed, or fails on its first unhealthy allocation
  // for want of a progress deadline); a running one only when the watcher marked it
  // unhealthy (DesiredTransition.Reschedule) in the active deployment.
  bool MayReschedule(const model::Allocation& a) const;
  // Canaries to place now for `destructive` allocations to replace, given `existing`.
  int CanariesWanted(const model::TaskGroup& g, int destructive, int existing) const;
  // Whether the group waits for its canaries to be promoted.
  bool Canarying(const model::TaskGroup& g) const;
  // How many destructive updates the group may make now (`live`: its allocations).
  int DestructiveLimit(const model::TaskGroup& g, const std::vector<AllocPtr>& live) const;
  // Paused, failed, or waiting for promotion: only replacements are placed.
  bool PlacementsBlocked(const model::TaskGroup& g) const;

  // Records the group's outcome: creates the deployment of this version when it needs
  // one, and sets the group's desired counts. Returns the deployment ID that the
  // group's new and updated allocations get (empty: none).
  std::string AttachGroup(const model::TaskGroup& g, const GroupOutcome& o);
  // After every group: the deployment's success, or its description while it waits for
  // promotion, into the plan.
  void Finish();

 private:
  const model::DeploymentState* GroupState(const std::string& group) const;
  bool Active() const { return deployment_ && deployment_->Active(); }

  const SchedulerInput& in_;
  PlanResult& plan_;
  // The deployment of the job's current version (active, or failed), as this pass
  // leaves it; none when there is none or it finished.
  std::optional<model::Deployment> deployment_;
  bool created_ = false;
  bool changed_ = false;
  std::map<std::string, bool> complete_;  // per attached group
};

}  // namespace drover::server
