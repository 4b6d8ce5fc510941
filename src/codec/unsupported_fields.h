// Job features that the API's JSON can express but Drover does not carry out yet.
// Registering such a job is refused with a message naming the field, rather than
// accepting it and silently running something else (a periodic job launched at once,
// a task started without its templates).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

#include "codec/json.h"

namespace drover::codec {

// InvalidArgument naming the first unsupported field that is set (non-null, non-empty),
// e.g. "Job.TaskGroups[0].Tasks[1].Templates: template blocks are not supported by
// Drover yet"; OK otherwise. Update and Migrate are accepted: they only tune rolling
// updates, and Drover replaces changed allocations at once (docs/jobspec.md).
absl::Status CheckSupportedJobFields(const Json& job);

// Warnings for what is accepted but not carried out yet, returned with the
// registration (Nomad's `Warnings`): the job's and groups' `Update` blocks (changed
// allocations are replaced at once) and groups' `Migrate` blocks (there is no node
// drain yet). Empty when the job sets neither.
std::vector<std::string> UnusedJobFieldWarnings(const Json& job);

}  // namespace drover::codec
