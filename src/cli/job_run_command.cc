// drover job run: register a job file (HCL or JSON) and monitor its evaluation (Nomad's
// command/job_run.go); with -output, print the API JSON instead of submitting.
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/job_file.h"
#include "cli/json_fields.h"
#include "cli/monitor.h"
#include "cli/periodic_launch.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

int RunJobRun(const JobRunOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  absl::StatusOr<codec::Json> job = LoadJobFile(options.job_file);
  if (!job.ok()) {
    ui.Error(absl::StrCat("Error getting job struct: ", job.status().message()));
    return kExitError;
  }
  if (options.output) {
    codec::Json wrapped = codec::Json::object();
    wrapped["Job"] = *job;
    ui.Output(codec::Dump(wrapped, /*pretty=*/true));
    return kExitOk;
  }
  const bool periodic = JsonPresent(*job, "Periodic");
  const bool parameterized = JsonPresent(*job, "ParameterizedJob");

  codec::Json request = codec::Json::object();
  request["Job"] = *job;
  if (options.check_index) {
    request["EnforceIndex"] = true;
    request["JobModifyIndex"] = *options.check_index;
  }
  absl::StatusOr<HttpResponse> response = client.Do("PUT", "/v1/jobs", codec::Dump(request));
  if (!response.ok()) {
    const std::string message(response.status().message());
    // A stale -check-index: the servers' reason, then that nothing changed.
    if (const size_t at = message.find("Enforcing job modify index");
        options.check_index && at != std::string::npos) {
      std::string reason = message.substr(at);
      if (!reason.empty() && reason.back() == ')')
        reason.pop_back();
      ui.Error(reason);
      ui.Error("Job not updated");
      return kExitError;
    }
    ui.Error(absl::StrCat("Error submitting job: ", message));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  if (!result.ok()) {
    ui.Error(absl::StrCat("Error submitting job: malformed response: ", result.status().message()));
    return kExitError;
  }
  const std::string eval_id = JsonString(*result, "EvalID");
  if (const std::string warnings = JsonString(*result, "Warnings"); !warnings.empty()) {
    ui.Output(absl::StrCat("Job Warnings:\n", warnings, "\n"));
  }

  if (options.detach || periodic || parameterized || eval_id.empty()) {
    ui.Output("Job registration successful");
    if (periodic && !parameterized) {
      absl::StatusOr<std::optional<std::string>> next =
          NextLaunchText(*JsonMember(*job, "Periodic"), ui.Now());
      if (!next.ok())
        ui.Error(absl::StrCat("Error determining next launch time: ", next.status().message()));
      else if (*next)
        ui.Output(absl::StrCat("Approximate next launch time: ", **next));
    } else if (!parameterized && !eval_id.empty()) {
      ui.Output(absl::StrCat("Evaluation ID: ", eval_id));
    }
    return kExitOk;
  }
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

}  // namespace drover::cli
