// Input variables of a job file: `variable "name" { type, default, validation }` blocks
// and `variables { name = default }`, given values by var files and -var assignments
// (later ones win), converted to their declared types.
#pragma once

#include <vector>

#include "absl/status/statusor.h"

#include "jobspec/ast.h"
#include "jobspec/eval.h"
#include "jobspec/jobspec.h"

namespace drover::jobspec {

// The `var` object. Errors: a value for an undeclared variable, a declared variable
// with no value, a value of the wrong type, a failed validation.
absl::StatusOr<Json> ResolveVariables(Evaluator& evaluator, const std::vector<const Block*>& blocks,
                                      const ParseOptions& options);

}  // namespace drover::jobspec
