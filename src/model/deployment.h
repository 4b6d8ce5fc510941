// Deployments (http-api "Deployment"): the rollout of one version of a service job
// whose groups have an update block, with each group's progress.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace drover::model {

using common::Duration;
using common::Time;

inline constexpr char kDeploymentRunning[] = "running";
inline constexpr char kDeploymentPaused[] = "paused";
inline constexpr char kDeploymentFailed[] = "failed";
inline constexpr char kDeploymentSuccessful[] = "successful";
inline constexpr char kDeploymentCancelled[] = "cancelled";
inline constexpr char kDeploymentPending[] = "pending";
inline constexpr char kDeploymentBlocked[] = "blocked";
inline constexpr char kDeploymentUnblocking[] = "unblocking";
inline constexpr char kDeploymentInitializing[] = "initializing";

// Nomad's status descriptions, word for word: clients match on them.
inline constexpr char kDeploymentDescRunning[] = "Deployment is running";
inline constexpr char kDeploymentDescRunningNeedsPromotion[] =
    "Deployment is running but requires manual promotion";
inline constexpr char kDeploymentDescRunningAutoPromotion[] =
    "Deployment is running pending automatic promotion";
inline constexpr char kDeploymentDescPaused[] = "Deployment is paused";
inline constexpr char kDeploymentDescSuccessful[] = "Deployment completed successfully";
inline constexpr char kDeploymentDescStoppedJob[] = "Cancelled because job is stopped";
inline constexpr char kDeploymentDescNewerJob[] = "Cancelled due to newer version of job";
inline constexpr char kDeploymentDescFailedAllocations[] = "Failed due to unhealthy allocations";
inline constexpr char kDeploymentDescProgressDeadline[] = "Failed due to progress deadline";
inline constexpr char kDeploymentDescFailedByUser[] = "Deployment marked as failed";

// One task group's part of a deployment.
struct DeploymentState {
  bool auto_revert = false;
  bool auto_promote = false;
  Duration progress_deadline{0};
  // Fails the deployment unless an allocation becomes healthy by then (zero: no
  // deadline; set once the first allocation is placed).
  Time require_progress_by{};
  bool promoted = false;
  std::vector<std::string> placed_canaries;  // allocation IDs
  int desired_canaries = 0;
  int desired_total = 0;
  int placed_allocs = 0;
  int healthy_allocs = 0;
  int unhealthy_allocs = 0;
  friend bool operator==(const DeploymentState&, const DeploymentState&) = default;

  // Everything the group wants: healthy allocations for its total (and its canaries),
  // the canaries promoted.
  bool Done() const {
    return (desired_canaries == 0 || promoted) &&
           healthy_allocs >= std::max(desired_total, desired_canaries);
  }
};

struct Deployment {
  std::string id;
  std::string namespace_;
  std::string job_id;
  uint64_t job_version = 0;
  uint64_t job_modify_index = 0;
  uint64_t job_spec_modify_index = 0;
  uint64_t job_create_index = 0;
  std::map<std::string, DeploymentState> task_groups;
  std::string status;
  std::string status_description;
  int eval_priority = 0;
  uint64_t create_index = 0;
  uint64_t modify_index = 0;
  int64_t create_time = 0;  // Unix nanoseconds
  int64_t modify_time = 0;
  friend bool operator==(const Deployment&, const Deployment&) = default;

  // Still rolling out (Nomad's Active): neither finished, failed nor cancelled.
  bool Active() const { return IsActiveDeploymentStatus(status); }
  // Some group has canaries it waits to have promoted.
  bool RequiresPromotion() const {
    for (const auto& [name, g] : task_groups)
      if (g.desired_canaries > 0 && !g.promoted)
        return true;
    return false;
  }
  bool HasAutoPromote() const {
    for (const auto& [name, g] : task_groups)
      if (g.desired_canaries > 0 && !g.auto_promote)
        return false;
    return !task_groups.empty();
  }

  static bool IsActiveDeploymentStatus(std::string_view s) {
    return s == kDeploymentRunning || s == kDeploymentPaused || s == kDeploymentPending ||
           s == kDeploymentBlocked || s == kDeploymentUnblocking || s == kDeploymentInitializing;
  }
};

}  // namespace drover::model
