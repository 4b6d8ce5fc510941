#include "cli/listing.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

namespace {

const char* BoolText(bool b) {
  return b ? "true" : "false";
}

}  // namespace

JobRow JobRowFromJson(const codec::Json& j) {
  JobRow row;
  row.id = JsonString(j, "ID");
  row.parent_id = JsonString(j, "ParentID");
  row.type = JsonString(j, "Type");
  row.priority = JsonInt(j, "Priority");
  row.status = JsonString(j, "Status");
  row.stop = JsonBool(j, "Stop");
  row.periodic = JsonPresent(j, "Periodic");
  row.parameterized = JsonPresent(j, "ParameterizedJob");
  row.submit_time = JsonInt(j, "SubmitTime");
  return row;
}

std::string JobStatusString(const std::string& status, bool stop) {
  return stop ? absl::StrCat(status, " (stopped)") : status;
}

std::string FormatJobList(const std::vector<JobRow>& jobs) {
  std::vector<std::string> rows = {"ID|Type|Priority|Status|Submit Date"};
  for (const JobRow& job : jobs) {
    std::string type = job.type;
    if (job.periodic) {
      type += "/periodic";
    }
    if (job.parameterized) {
      type += "/parameterized";
    }
    rows.push_back(absl::StrCat(job.id, "|", type, "|", job.priority, "|",
                                JobStatusString(job.status, job.stop), "|",
                                FormatUnixNano(job.submit_time)));
  }
  return FormatList(rows);
}

AllocRow AllocRowFromJson(const codec::Json& j) {
  AllocRow row;
  row.id = JsonString(j, "ID");
  row.eval_id = JsonString(j, "EvalID");
  row.node_id = JsonString(j, "NodeID");
  row.node_name = JsonString(j, "NodeName");
  row.job_id = JsonString(j, "JobID");
  row.task_group = JsonString(j, "TaskGroup");
  if (JsonMember(j, "JobVersion") != nullptr) {
    row.job_version = JsonUint(j, "JobVersion");
  } else if (const codec::Json* job = JsonMember(j, "Job"); job != nullptr) {
    row.job_version = JsonUint(*job, "Version");
  }
  row.desired_status = JsonString(j, "DesiredStatus");
  row.client_status = JsonString(j, "ClientStatus");
  row.client_description = JsonString(j, "ClientDescription");
  row.create_time = JsonInt(j, "CreateTime");
  row.modify_time = JsonInt(j, "ModifyTime");
  row.create_index = JsonUint(j, "CreateIndex");
  return row;
}

std::vector<AllocRow> AllocRowsFromJson(const codec::Json& j) {
  std::vector<AllocRow> rows;
  if (!j.is_array()) {
    return rows;
  }
  for (const auto& item : j) {
    rows.push_back(AllocRowFromJson(item));
  }
  return rows;
}

std::string FormatAllocList(const std::vector<AllocRow>& allocs, bool verbose, size_t id_length,
                            common::Time now) {
  if (allocs.empty()) {
    return "No allocations placed";
  }
  std::vector<std::string> rows;
  if (verbose) {
    rows.push_back(
        "ID|Eval ID|Node ID|Node Name|Task Group|Version|Desired|Status|Created|Modified");
    for (const AllocRow& a : allocs) {
      rows.push_back(absl::StrCat(Limit(a.id, id_length), "|", Limit(a.eval_id, id_length), "|",
                                  Limit(a.node_id, id_length), "|", a.node_name, "|", a.task_group,
                                  "|", a.job_version, "|", a.desired_status, "|", a.client_status,
                                  "|", FormatUnixNano(a.create_time), "|",
                                  FormatUnixNano(a.modify_time)));
    }
  } else {
    rows.push_back("ID|Node ID|Task Group|Version|Desired|Status|Created|Modified");
    for (const AllocRow& a : allocs) {
      rows.push_back(absl::StrCat(Limit(a.id, id_length), "|", Limit(a.node_id, id_length), "|",
                                  a.task_group, "|", a.job_version, "|", a.desired_status, "|",
                                  a.client_status, "|",
                                  PrettyTimeDiff(common::FromUnixNanos(a.create_time), now), "|",
                                  PrettyTimeDiff(common::FromUnixNanos(a.modify_time), now)));
    }
  }
  return FormatList(rows);
}

NodeRow NodeRowFromJson(const codec::Json& j) {
  NodeRow row;
  row.id = JsonString(j, "ID");
  row.node_pool = JsonString(j, "NodePool");
  row.datacenter = JsonString(j, "Datacenter");
  row.name = JsonString(j, "Name");
  row.node_class = JsonString(j, "NodeClass");
  row.address = JsonString(j, "Address");
  row.version = JsonString(j, "Version");
  row.drain = JsonBool(j, "Drain");
  row.eligibility = JsonString(j, "SchedulingEligibility");
  row.status = JsonString(j, "Status");
  return row;
}

std::string FormatNodeList(const std::vector<NodeRow>& nodes, bool verbose, size_t id_length) {
  std::string header = "ID|Node Pool|DC|Name|Class|";
  if (verbose) {
    header += "Address|Version|";
  }
  header += "Drain|Eligibility|Status";
  std::vector<std::string> rows = {header};
  for (const NodeRow& n : nodes) {
    std::string row = absl::StrCat(Limit(n.id, id_length), "|", n.node_pool, "|", n.datacenter, "|",
                                   n.name, "|", n.node_class);
    if (verbose) {
      absl::StrAppend(&row, "|", n.address, "|", n.version);
    }
    absl::StrAppend(&row, "|", BoolText(n.drain), "|", n.eligibility, "|", n.status);
    rows.push_back(std::move(row));
  }
  return FormatList(rows);
}

std::string FormatJobSummary(const model::JobSummary& summary) {
  std::vector<std::string> rows = {
      "Task Group|Queued|Starting|Running|Failed|Complete|Lost|Unknown"};
  for (const auto& [group, s] : summary.summary) {
    rows.push_back(absl::StrCat(group, "|", s.queued, "|", s.starting, "|", s.running, "|",
                                s.failed, "|", s.complete, "|", s.lost, "|", s.unknown));
  }
  return FormatList(rows);
}

}  // namespace drover::cli
