// Codecs for model parts that more than one top-level object embeds (constraints and
// networks in jobs, allocations and nodes; allocation metrics in allocations and
// evaluations; jobs inside allocations). Private to codec/.
#pragma once

#include <string>

#include "absl/status/statusor.h"

#include "codec/internal/json_util.h"
#include "model/allocation.h"
#include "model/job.h"
#include "model/task_state.h"

namespace drover::codec::internal {

Json ConstraintJson(const model::Constraint& c);
absl::StatusOr<model::Constraint> DecodeConstraint(const Json& j, const std::string& path);
Json ConstraintsOrNull(const std::vector<model::Constraint>& cs);

Json PortJson(const model::Port& p);
absl::StatusOr<model::Port> DecodePort(const Json& j, const std::string& path);
Json NetworkJson(const model::NetworkResource& n);
absl::StatusOr<model::NetworkResource> DecodeNetwork(const Json& j, const std::string& path);
Json NetworksOrNull(const std::vector<model::NetworkResource>& ns);

absl::StatusOr<model::Job> DecodeJob(const Json& j, const std::string& path);

Json AllocMetricJson(const model::AllocMetric& m);
absl::StatusOr<model::AllocMetric> DecodeAllocMetric(const Json& j, const std::string& path);

absl::StatusOr<model::TaskEvent> DecodeTaskEvent(const Json& j, const std::string& path);
absl::StatusOr<model::TaskState> DecodeTaskState(const Json& j, const std::string& path);

}  // namespace drover::codec::internal
