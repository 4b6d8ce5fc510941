// Diagnostics in HCL's message shape, as Nomad prints them:
// "job.nomad:12,5-9: Unsupported argument; An argument named \"foo\" is not expected here."
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include "jobspec/ast.h"

namespace drover::jobspec {

// "file:line,col-col" (or "file:line,col-line,col" across lines).
std::string FormatRange(absl::string_view file, const Range& range);

// InvalidArgument with "<range>: <summary>; <detail>" (no "; " part when detail is empty).
absl::Status DiagError(absl::string_view file, const Range& range, absl::string_view summary,
                       absl::string_view detail);

}  // namespace drover::jobspec
