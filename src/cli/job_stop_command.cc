// drover job stop: deregister a job (optionally purging it) and monitor the resulting
// evaluation (Nomad's command/job_stop.go).
#include <cctype>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/monitor.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

int RunJobStop(const JobStopOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id) {
    return kExitError;
  }

  // A prefix match stops a job the user did not name in full: confirm first.
  if (*job_id != options.id && !options.yes) {
    const std::string answer =
        ui.Ask(absl::StrCat("Are you sure you want to stop job ", Quote(*job_id), "? [y/N]"));
    if (answer.empty() || std::tolower(static_cast<unsigned char>(answer[0])) == 'n') {
      ui.Output("Cancelling job stop");
      return kExitOk;
    }
    if (std::tolower(static_cast<unsigned char>(answer[0])) == 'y' && answer.size() > 1) {
      ui.Output("For confirmation, an exact ‘y’ is required.");
      return kExitOk;
    }
    if (answer != "y") {
      ui.Output("No confirmation detected. For confirmation, an exact ‘y’ is required.");
      return kExitError;
    }
  }

  absl::StatusOr<HttpResponse> response = client.Do(
      "DELETE",
      absl::StrCat("/v1/job/", PathEscape(*job_id), "?purge=", options.purge ? "true" : "false"));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error deregistering job: ", response.status().message()));
    return kExitError;
  }
  std::string eval_id;
  if (absl::StatusOr<codec::Json> result = codec::ParseJson(response->body); result.ok()) {
    eval_id = JsonString(*result, "EvalID");
  }
  // Stopping a periodic or parameterized job creates no evaluation.
  if (eval_id.empty()) {
    return kExitOk;
  }
  if (options.detach) {
    ui.Output(eval_id);
    return kExitOk;
  }
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

}  // namespace drover::cli
