// A job diff (the JobDiff JSON of a plan or of /v1/job/:id/versions) as Nomad's CLI
// prints it in `job plan` and `job history -p`:
//
//   +/- Job: "web"
//   +/- Task Group: "front" (2 create, 1 in-place update)
//     +/- Count: "1" => "3" (forces create)
//         Task: "server"
//
// "+" added, "-" deleted, "+/-" edited; names and values are aligned per level. Without
// `verbose`, the fields of a job, group or task are shown only when it was edited, and
// an added or deleted task only by its name.
#pragma once

#include <string>

#include "codec/json.h"

namespace drover::cli {

std::string FormatJobDiff(const codec::Json& diff, bool verbose);

}  // namespace drover::cli
