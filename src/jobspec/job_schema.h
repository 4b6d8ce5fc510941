// The schema of a job file's `job` block (see job_schema.cc).
#pragma once

#include "jobspec/decode.h"

namespace drover::jobspec {

const BlockSpec& JobSpec();

}  // namespace drover::jobspec
