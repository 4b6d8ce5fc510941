// The task runner's LocalState as JSON, for the client state DB (reference §4.1:
// {Hooks, TaskHandle, RunComplete}). Field names follow Nomad's; the driver handle
// carries what our drivers need to re-attach (pid and process start time).
#pragma once

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "client/taskrunner/task_hook.h"

namespace drover::taskrunner {

nlohmann::json ToJson(const LocalState& s);
// Fields it does not know are ignored (a newer agent may add some); a wrong type is an
// error naming the field.
absl::StatusOr<LocalState> LocalStateFromJson(const nlohmann::json& j);

}  // namespace drover::taskrunner
