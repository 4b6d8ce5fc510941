// drover job status: the job list, or one job's header, summary, placement failures and
// allocations (Nomad's command/job_status.go).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/listing.h"
#include "cli/lookup.h"
#include "cli/periodic_launch.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "model/evaluation.h"

namespace drover::cli {

namespace {

const char* BoolText(bool b) {
  return b ? "true" : "false";
}

int ListJobs(HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> jobs = GetJson(client, "/v1/jobs");
  if (!jobs.ok()) {
    ui.Error(absl::StrCat("Error querying jobs: ", jobs.status().message()));
    return kExitError;
  }
  std::vector<JobRow> rows;
  if (jobs->is_array()) {
    for (const auto& item : *jobs) {
      rows.push_back(JobRowFromJson(item));
    }
  }
  if (rows.empty()) {
    ui.Output("No running jobs");
  } else {
    ui.Output(FormatJobList(rows));
  }
  return kExitOk;
}

std::string FormatJobHeader(const codec::Json& job, common::Time now) {
  const JobRow row = JobRowFromJson(job);
  std::vector<std::string> basic = {
      absl::StrCat("ID|", row.id),
      absl::StrCat("Name|", JsonString(job, "Name")),
      absl::StrCat("Submit Date|", FormatUnixNano(row.submit_time)),
      absl::StrCat("Type|", row.type),
      absl::StrCat("Priority|", row.priority),
      absl::StrCat("Datacenters|", absl::StrJoin(JsonStrings(job, "Datacenters"), ",")),
      absl::StrCat("Namespace|", JsonString(job, "Namespace")),
      absl::StrCat("Node Pool|", JsonString(job, "NodePool")),
      absl::StrCat("Status|", JobStatusString(row.status, row.stop)),
      absl::StrCat("Periodic|", BoolText(row.periodic)),
      absl::StrCat("Parameterized|", BoolText(row.parameterized)),
  };
  const codec::Json* periodic = JsonMember(job, "Periodic");
  if (row.periodic && !row.parameterized && periodic != nullptr) {
    if (row.stop) {
      basic.push_back("Next Periodic Launch|none (job stopped)");
    } else if (auto next = NextLaunchText(*periodic, now); next.ok() && *next) {
      basic.push_back(absl::StrCat("Next Periodic Launch|", **next));
    }
  }
  return FormatKV(basic);
}

// Nomad's evalFailureStatus.
std::string EvalFailureText(const model::Evaluation& eval) {
  if (eval.status == model::kEvalBlocked) {
    return "N/A - In Progress";
  }
  return BoolText(!eval.failed_tg_allocs.empty());
}

void OutputFailedPlacements(const model::Evaluation& eval, Ui& ui) {
  ui.Output("\nPlacement Failure");
  size_t i = 0;
  for (const auto& [group, metrics] : eval.failed_tg_allocs) {
    ui.Output(absl::StrCat("Task Group ", Quote(group), ":"));
    ui.Output(FormatAllocMetrics(metrics, "  "));
    if (++i != eval.failed_tg_allocs.size()) {
      ui.Output("");
    }
  }
}

// Previously launched children of a periodic or parameterized job.
int OutputChildren(HttpClient& client, Ui& ui, const std::string& job_id, bool periodic) {
  const std::string prefix = absl::StrCat(job_id, periodic ? "/periodic-" : "/dispatch-");
  absl::StatusOr<codec::Json> children =
      GetJson(client, absl::StrCat("/v1/jobs?prefix=", QueryEscape(prefix)));
  if (!children.ok()) {
    ui.Error(absl::StrCat("Error querying job: ", children.status().message()));
    return kExitError;
  }
  std::vector<std::string> rows = {"ID|Status"};
  if (children->is_array()) {
    for (const auto& child : *children) {
      if (JsonString(child, "ParentID") == job_id) {
        rows.push_back(absl::StrCat(JsonString(child, "ID"), "|", JsonString(child, "Status")));
      }
    }
  }
  if (rows.size() == 1) {
    ui.Output(periodic ? "\nNo instances of periodic job found"
                       : "\nNo dispatched instances of parameterized job found");
    return kExitOk;
  }
  ui.Output(periodic ? "\nPreviously Launched Jobs" : "\nDispatched Jobs");
  ui.Output(FormatList(rows));
  return kExitOk;
}

// The job's evaluations (with -evals or -verbose), and the placement failures of the
// latest one that failed to place.
int OutputEvaluations(const JobStatusOptions& options, const codec::Json& evals_json, Ui& ui,
                      size_t id_length) {
  std::vector<model::Evaluation> evals;
  if (evals_json.is_array()) {
    for (const auto& item : evals_json) {
      absl::StatusOr<model::Evaluation> eval = codec::EvaluationFromJson(item);
      if (!eval.ok()) {
        ui.Error(absl::StrCat("Error querying job evaluations: ", eval.status().message()));
        return kExitError;
      }
      evals.push_back(std::move(*eval));
    }
  }
  const model::Evaluation* latest = nullptr;
  const model::Evaluation* latest_failed = nullptr;
  bool blocked = false;
  std::vector<std::string> eval_rows = {"ID|Priority|Triggered By|Status|Placement Failures"};
  for (const model::Evaluation& eval : evals) {
    eval_rows.push_back(absl::StrCat(Limit(eval.id, id_length), "|", eval.priority, "|",
                                     eval.triggered_by, "|", eval.status, "|",
                                     EvalFailureText(eval)));
    blocked = blocked || eval.status == model::kEvalBlocked;
    if (latest == nullptr || latest->create_index < eval.create_index) {
      latest = &eval;
    }
    if (!eval.failed_tg_allocs.empty() &&
        (latest_failed == nullptr || latest_failed->create_index < eval.create_index)) {
      latest_failed = &eval;
    }
  }
  if ((options.verbose || options.evals) && !evals.empty()) {
    ui.Output("\nEvaluations");
    ui.Output(FormatList(eval_rows));
  }
  // Nomad shows failures while a blocked eval waits for capacity; we also show them when
  // the newest evaluation itself failed to place (no blocked eval is created then).
  if (latest_failed != nullptr && (blocked || latest_failed == latest)) {
    OutputFailedPlacements(*latest_failed, ui);
  }
  return kExitOk;
}

// The job's latest deployment, as Nomad's "Latest Deployment" section shows it; nothing
// for a job that never had one.
int OutputLatestDeployment(HttpClient& client, Ui& ui, const std::string& job_path,
                           size_t id_length) {
  absl::StatusOr<codec::Json> d = GetJson(client, absl::StrCat(job_path, "/deployment"));
  if (!d.ok()) {
    ui.Error(absl::StrCat("Error querying latest job deployment: ", d.status().message()));
    return kExitError;
  }
  if (!d->is_object())
    return kExitOk;
  std::string out = FormatKV({
      absl::StrCat("ID|", Limit(JsonString(*d, "ID"), id_length)),
      absl::StrCat("Status|", JsonString(*d, "Status")),
      absl::StrCat("Description|", JsonString(*d, "StatusDescription")),
  });
  if (std::string groups = FormatDeploymentGroups(*d); !groups.empty())
    absl::StrAppend(&out, "\n\nDeployed\n", groups);
  ui.Output("\nLatest Deployment");
  ui.Output(out);
  return kExitOk;
}

int OutputJobInfo(const JobStatusOptions& options, HttpClient& client, Ui& ui,
                  const std::string& job_id, bool periodic_or_parameterized, size_t id_length) {
  const std::string job_path = absl::StrCat("/v1/job/", PathEscape(job_id));

  absl::StatusOr<codec::Json> summary_json = GetJson(client, absl::StrCat(job_path, "/summary"));
  if (!summary_json.ok()) {
    ui.Error(absl::StrCat("Error querying job summary: ", summary_json.status().message()));
    return kExitError;
  }
  if (periodic_or_parameterized) {
    return kExitOk;
  }

  absl::StatusOr<codec::Json> allocs_json = GetJson(
      client, absl::StrCat(job_path, "/allocations", options.all_allocs ? "?all=true" : ""));
  if (!allocs_json.ok()) {
    ui.Error(absl::StrCat("Error querying job allocations: ", allocs_json.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> evals_json = GetJson(client, absl::StrCat(job_path, "/evaluations"));
  if (!evals_json.ok()) {
    ui.Error(absl::StrCat("Error querying job evaluations: ", evals_json.status().message()));
    return kExitError;
  }

  if (!summary_json->is_null()) {
    absl::StatusOr<model::JobSummary> summary = codec::JobSummaryFromJson(*summary_json);
    if (!summary.ok()) {
      ui.Error(absl::StrCat("Error querying job summary: ", summary.status().message()));
      return kExitError;
    }
    ui.Output("\nSummary");
    ui.Output(FormatJobSummary(*summary));
  }

  if (int rc = OutputEvaluations(options, *evals_json, ui, id_length); rc != kExitOk)
    return rc;

  if (int rc = OutputLatestDeployment(client, ui, job_path, id_length); rc != kExitOk)
    return rc;

  std::vector<AllocRow> allocs = AllocRowsFromJson(*allocs_json);
  std::stable_sort(allocs.begin(), allocs.end(), [](const AllocRow& a, const AllocRow& b) {
    return a.create_index > b.create_index;
  });
  ui.Output("\nAllocations");
  ui.Output(FormatAllocList(allocs, options.verbose, id_length, ui.Now()));
  return kExitOk;
}

}  // namespace

int RunJobStatus(const JobStatusOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  if (options.id.empty()) {
    return ListJobs(client, ui);
  }
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id) {
    return kExitError;
  }
  absl::StatusOr<codec::Json> job = GetJson(client, absl::StrCat("/v1/job/", PathEscape(*job_id)));
  if (!job.ok()) {
    ui.Error(absl::StrCat("Error querying job: ", job.status().message()));
    return kExitError;
  }
  ui.Output(FormatJobHeader(*job, ui.Now()));
  if (options.short_output) {
    return kExitOk;
  }
  const bool periodic = JsonPresent(*job, "Periodic");
  const bool parameterized = JsonPresent(*job, "ParameterizedJob");
  if (parameterized) {
    const codec::Json* spec = JsonMember(*job, "ParameterizedJob");
    ui.Output("\nParameterized Job");
    ui.Output(FormatKV({
        absl::StrCat("Payload|", JsonString(*spec, "Payload")),
        absl::StrCat("Required Metadata|", absl::StrJoin(JsonStrings(*spec, "MetaRequired"), ", ")),
        absl::StrCat("Optional Metadata|", absl::StrJoin(JsonStrings(*spec, "MetaOptional"), ", ")),
    }));
  }
  int rc = OutputJobInfo(options, client, ui, *job_id, periodic || parameterized, id_length);
  if (rc != kExitOk || !(periodic || parameterized)) {
    return rc;
  }
  return OutputChildren(client, ui, *job_id, periodic && !parameterized);
}

}  // namespace drover::cli
