// The list tables the CLI prints (jobs, allocations, nodes, job summaries), built from
// API list stubs. Row structs hold just the columns; *FromJson read them leniently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/json.h"
#include "common/clock.h"
#include "model/evaluation.h"

namespace drover::cli {

struct JobRow {
  std::string id;
  std::string parent_id;
  std::string type;
  int64_t priority = 0;
  std::string status;
  bool stop = false;
  bool periodic = false;
  bool parameterized = false;
  int64_t submit_time = 0;  // Unix nanoseconds
};

// From a JobListStub (Periodic/ParameterizedJob are booleans there) or a full Job
// (objects or null there).
JobRow JobRowFromJson(const codec::Json& j);
// "ID  Type  Priority  Status  Submit Date" (Nomad's createStatusListOutput).
std::string FormatJobList(const std::vector<JobRow>& jobs);
// "running", or "dead (stopped)" for a stopped job (Nomad's getStatusString).
std::string JobStatusString(const std::string& status, bool stop);

struct AllocRow {
  std::string id;
  std::string eval_id;
  std::string node_id;
  std::string node_name;
  std::string job_id;
  std::string task_group;
  uint64_t job_version = 0;
  std::string desired_status;
  std::string client_status;
  std::string client_description;
  int64_t create_time = 0;  // Unix nanoseconds
  int64_t modify_time = 0;
  uint64_t create_index = 0;
};

// From an AllocationListStub (JobVersion) or a full Allocation (Job.Version).
AllocRow AllocRowFromJson(const codec::Json& j);
// Rows of a JSON array (anything else gives none).
std::vector<AllocRow> AllocRowsFromJson(const codec::Json& j);
// The "Allocations" table, or "No allocations placed". Short form: "ID  Node ID  Task
// Group  Version  Desired  Status  Created  Modified" with relative times against
// `now`; verbose adds Eval ID and Node Name and prints absolute times. IDs are cut to
// `id_length`.
std::string FormatAllocList(const std::vector<AllocRow>& allocs, bool verbose, size_t id_length,
                            common::Time now);

struct NodeRow {
  std::string id;
  std::string node_pool;
  std::string datacenter;
  std::string name;
  std::string node_class;
  std::string address;
  std::string version;
  bool drain = false;
  std::string eligibility;
  std::string status;
};

NodeRow NodeRowFromJson(const codec::Json& j);
// "ID  Node Pool  DC  Name  Class  Drain  Eligibility  Status" (verbose adds Address and
// Version after Class).
std::string FormatNodeList(const std::vector<NodeRow>& nodes, bool verbose, size_t id_length);

// The "Summary" table: "Task Group  Queued  Starting  Running  Failed  Complete  Lost
// Unknown", groups sorted by name.
std::string FormatJobSummary(const model::JobSummary& summary);

}  // namespace drover::cli
