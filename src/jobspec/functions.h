// The functions job files commonly use, with HCL's (Terraform's) names and behaviour:
//   strings:     upper lower title format join split replace trimspace trim trimprefix
//                trimsuffix chomp substr strrev indent startswith endswith regex
//                regexall (RE2: linear time, so hostile patterns cannot hang the parser)
//   collections: length concat contains keys values lookup merge element index range
//                distinct flatten coalesce coalescelist compact slice reverse sort
//                zipmap chunklist tolist toset tomap tostring tonumber tobool
//   numbers:     min max abs ceil floor parseint pow signum
//   encoding:    jsonencode jsondecode base64encode base64decode urlencode
//   ids, time:   uuidv4 timestamp timeadd
//   files:       file fileexists templatefile (only when EvalOptions::allow_fs; the
//                server's parse endpoint refuses them, as Nomad's does)
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "jobspec/eval.h"

namespace drover::jobspec {

// NotFound for an unknown function; InvalidArgument (without position, the caller adds
// it) for bad arguments; FailedPrecondition carrying an already-positioned message.
absl::StatusOr<Json> CallFunction(Evaluator& evaluator, const std::string& name,
                                  const std::vector<Json>& args);

}  // namespace drover::jobspec
