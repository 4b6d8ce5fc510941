// Job validation: reports every problem at once, in Nomad's multi-error format:
//   "2 errors occurred:\n\t* Missing job datacenters\n\t* ...\n\n"
// Runs on a canonicalized job. Returns InvalidArgument with that text, or OK.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

#include "model/job.h"

namespace drover::codec {

absl::Status ValidateJob(const model::Job& job);

// The one namespace that exists (Drover cannot create others yet).
inline constexpr char kDefaultNamespace[] = "default";
// Nomad's namespace names: 1-128 of [a-zA-Z0-9-].
bool ValidNamespaceName(const std::string& ns);

// Formats a list of messages as Go's hashicorp/multierror does.
std::string FormatMultiError(const std::vector<std::string>& errors);

}  // namespace drover::codec
