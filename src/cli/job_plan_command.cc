// drover job plan: what running a job file would change, from the servers' scheduler
// dry-run (Nomad's command/job_plan.go).
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/diff_format.h"
#include "cli/format.h"
#include "cli/job_file.h"
#include "cli/json_fields.h"
#include "cli/periodic_launch.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

constexpr char kCheckIndexHelp[] =
    "When running the job with the check-index flag, the job will only be run if the\n"
    "job modify index given matches the server-side version. If the index has\n"
    "changed, another user has modified the job and the plan's results are\n"
    "potentially invalid.";

// "- If submitted now, next periodic launch would be at ..." for a periodic job, as
// Nomad's; "" for any other.
std::string NextLaunchLine(const codec::Json& plan, const codec::Json& job, common::Time now) {
  const codec::Json* periodic = JsonMember(job, "Periodic");
  if (JsonString(plan, "NextPeriodicLaunch").empty() ||
      JsonString(plan, "NextPeriodicLaunch") == "0001-01-01T00:00:00Z" || periodic == nullptr ||
      !periodic->is_object() || JsonPresent(job, "ParameterizedJob"))
    return "";
  absl::StatusOr<std::optional<std::string>> next = NextLaunchText(*periodic, now);
  if (!next.ok())
    return absl::StrCat("\n- Invalid time zone: ", next.status().message());
  if (!*next)
    return "";
  return absl::StrCat("\n- If submitted now, next periodic launch would be at ", **next, ".");
}

// "- All tasks successfully allocated." or the groups that would not fit, and why; and
// when a periodic job launches next.
std::string FormatDryRun(const codec::Json& plan, const codec::Json& job, common::Time now) {
  const codec::Json* failed = JsonMember(plan, "FailedTGAllocs");
  if (failed == nullptr || !failed->is_object() || failed->empty())
    return "- All tasks successfully allocated." + NextLaunchLine(plan, job, now);
  // The metrics decode as an evaluation's FailedTGAllocs do.
  absl::StatusOr<model::Evaluation> eval =
      codec::EvaluationFromJson(codec::Json{{"FailedTGAllocs", *failed}});
  std::string out = JsonString(job, "Type") == "system"
                        ? "- WARNING: Failed to place allocations on all nodes."
                        : "- WARNING: Failed to place all allocations.";
  if (!eval.ok())
    return out + NextLaunchLine(plan, job, now);
  for (const auto& [group, metrics] : eval->failed_tg_allocs) {
    const char* noun = metrics.coalesced_failures > 0 ? "allocations" : "allocation";
    absl::StrAppend(&out, "\n  Task Group ", Quote(group), " (failed to place ",
                    metrics.coalesced_failures + 1, " ", noun, "):");
    if (std::string reasons = FormatAllocMetrics(metrics, "    "); !reasons.empty())
      absl::StrAppend(&out, "\n", reasons);
  }
  return out + NextLaunchLine(plan, job, now);
}

// Nomad's exit code: 1 when some group would have allocations created, stopped,
// migrated or replaced.
int PlanExitCode(const codec::Json& plan) {
  const codec::Json* diff = JsonMember(plan, "Diff");
  if (diff == nullptr || !diff->is_object() || JsonString(*diff, "Type") == "None")
    return kExitOk;
  const codec::Json* annotations = JsonMember(plan, "Annotations");
  const codec::Json* updates =
      annotations != nullptr ? JsonMember(*annotations, "DesiredTGUpdates") : nullptr;
  if (updates == nullptr || !updates->is_object())
    return kExitOk;
  for (const auto& [group, u] : updates->items()) {
    if (JsonUint(u, "Stop") + JsonUint(u, "Place") + JsonUint(u, "Migrate") +
            JsonUint(u, "DestructiveUpdate") + JsonUint(u, "Canary") >
        0)
      return kExitPlanChanges;
  }
  return kExitOk;
}

}  // namespace

int RunJobPlan(const JobPlanOptions& options, HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> job = LoadJobFile(options.job_file);
  if (!job.ok()) {
    ui.Error(absl::StrCat("Error getting job struct: ", job.status().message()));
    return kExitPlanError;
  }
  const std::string id = JsonString(*job, "ID");
  if (id.empty()) {
    ui.Error("Error during plan: the job has no ID");
    return kExitPlanError;
  }
  // The diff is always asked for: the exit code depends on it; -diff only prints it.
  codec::Json request = {{"Job", *job}, {"Diff", true}};
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", absl::StrCat("/v1/job/", PathEscape(id), "/plan"), codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error during plan: ", response.status().message()));
    return kExitPlanError;
  }
  absl::StatusOr<codec::Json> plan = codec::ParseJson(response->body);
  if (!plan.ok() || !plan->is_object()) {
    ui.Error("Error during plan: malformed response");
    return kExitPlanError;
  }
  if (const codec::Json* diff = JsonMember(*plan, "Diff");
      options.diff && diff != nullptr && diff->is_object()) {
    std::string text = FormatJobDiff(*diff, options.verbose);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
    ui.Output(text + "\n");
  }
  ui.Output("Scheduler dry-run:");
  ui.Output(FormatDryRun(*plan, *job, ui.Now()));
  ui.Output("");
  if (const std::string warnings = JsonString(*plan, "Warnings"); !warnings.empty())
    ui.Output(absl::StrCat("Job Warnings:\n", warnings, "\n"));
  const uint64_t index = JsonUint(*plan, "JobModifyIndex");
  ui.Output(absl::StrCat("Job Modify Index: ", index,
                         "\nTo submit the job with version verification run:\n\n"
                         "drover job run -check-index ",
                         index, " ", options.job_file.file, "\n\n", kCheckIndexHelp));
  return PlanExitCode(*plan);
}

}  // namespace drover::cli
