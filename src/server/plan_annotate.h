// Puts a plan's decisions on the diff of the job it plans (Nomad's plan annotations,
// restated for Drover's scheduler): each group's Updates, whether its Count forces
// allocations to be created or destroyed, and what each changed task forces.
#pragma once

#include <map>
#include <string>

#include "model/job_diff.h"

namespace drover::server {

// The update types Nomad names in a group's Updates.
inline constexpr char kUpdateIgnore[] = "ignore";
inline constexpr char kUpdateCreate[] = "create";
inline constexpr char kUpdateDestroy[] = "destroy";
inline constexpr char kUpdateMigrate[] = "migrate";
inline constexpr char kUpdateCanary[] = "canary";
inline constexpr char kUpdateInPlace[] = "in-place update";
inline constexpr char kUpdateDestructive[] = "create/destroy update";

void AnnotateDiff(model::JobDiff& diff,
                  const std::map<std::string, model::DesiredUpdates>& updates);

}  // namespace drover::server
