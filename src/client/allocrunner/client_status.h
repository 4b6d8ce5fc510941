// Client status of an allocation from its task states (reference §2.1), first match
// wins: any failed dead task → failed; any running → running; any pending → pending;
// any dead → complete.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "model/task_state.h"

namespace drover::allocrunner {

struct ClientStatus {
  std::string status;
  std::string description;
};

ClientStatus ComputeClientStatus(const std::map<std::string, model::TaskState>& states);

}  // namespace drover::allocrunner
