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
// Drover yet"; OK otherwise.
absl::Status CheckSupportedJobFields(const Json& job);

}  // namespace drover::codec
