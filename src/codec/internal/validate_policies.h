// A group's policies checked as Nomad validates them (validate_policies.cc). Private
// to codec/: ValidateJob (validate.h) is the entry point. Each appends its problems to
// `errs`.
#pragma once

#include <string>
#include <vector>

#include "model/job.h"

namespace drover::codec::internal {

void CheckRestartPolicy(const model::RestartPolicy& p, std::vector<std::string>& errs);
// The group's restart, reschedule, migrate and update policies, as the job's type
// allows them.
void CheckGroupPolicies(const model::TaskGroup& group, const model::Job& job,
                        std::vector<std::string>& errs);

// The job's periodic and parameterized blocks (validate_periodic.cc).
void CheckPeriodicAndParameterized(const model::Job& job, std::vector<std::string>& errs);

}  // namespace drover::codec::internal
