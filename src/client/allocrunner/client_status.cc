#include "client/allocrunner/client_status.h"

#include "model/allocation.h"

namespace drover::allocrunner {

ClientStatus ComputeClientStatus(const std::map<std::string, model::TaskState>& states) {
  bool failed = false, running = false, pending = false, dead = false;
  for (const auto& [name, s] : states) {
    if (s.state == model::kTaskStateDead) {
      dead = true;
      failed = failed || s.failed;
    } else if (s.state == model::kTaskStateRunning) {
      running = true;
    } else {
      pending = true;
    }
  }
  if (failed)
    return {model::kClientFailed, "Failed tasks"};
  if (running)
    return {model::kClientRunning, "Tasks are running"};
  if (pending)
    return {model::kClientPending, "No tasks have started"};
  if (dead)
    return {model::kClientComplete, "All tasks have completed"};
  return {"", ""};
}

}  // namespace drover::allocrunner
