// drover job run: register a JSON job and monitor its evaluation (Nomad's
// command/job_run.go). HCL is not parsed client-side yet.
#include <cctype>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/monitor.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

namespace {

absl::StatusOr<std::string> ReadJobFile(const std::string& file) {
  if (file == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::string reason = std::error_code(errno, std::generic_category()).message();
    if (!reason.empty()) {
      reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
    }
    return absl::NotFoundError(
        absl::StrCat("Error getting jobfile from ", Quote(file), ": open ", file, ": ", reason));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("Error reading job file ", Quote(file)));
  }
  return text.str();
}

// The job object of a file holding either {"Job": {...}} or a bare job.
absl::StatusOr<codec::Json> JobFromFileText(const std::string& file, const std::string& text) {
  absl::StatusOr<codec::Json> parsed = codec::ParseJson(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Failed to parse JSON job file ", Quote(file),
                                                   ": ", parsed.status().message()));
  }
  codec::Json job = std::move(*parsed);
  if (job.is_object() && job.contains("Job")) {
    codec::Json inner = std::move(job["Job"]);
    job = std::move(inner);
  }
  if (!job.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Job file ", Quote(file), " does not hold a job object"));
  }
  return job;
}

}  // namespace

int RunJobRun(const JobRunOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  if (!options.json &&
      (absl::EndsWith(options.file, ".nomad") || absl::EndsWith(options.file, ".hcl"))) {
    ui.Error("Error: HCL job files are not supported yet; use the JSON form");
    return kExitError;
  }

  absl::StatusOr<std::string> text = ReadJobFile(options.file);
  if (!text.ok()) {
    ui.Error(absl::StrCat("Error getting job struct: ", text.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> job = JobFromFileText(options.file, *text);
  if (!job.ok()) {
    ui.Error(absl::StrCat("Error getting job struct: ", job.status().message()));
    return kExitError;
  }
  const bool periodic = JsonPresent(*job, "Periodic");
  const bool parameterized = JsonPresent(*job, "ParameterizedJob");

  codec::Json request = codec::Json::object();
  request["Job"] = *job;
  absl::StatusOr<HttpResponse> response = client.Do("PUT", "/v1/jobs", codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error submitting job: ", response.status().message()));
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
    if (!periodic && !parameterized && !eval_id.empty()) {
      ui.Output(absl::StrCat("Evaluation ID: ", eval_id));
    }
    return kExitOk;
  }
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

}  // namespace drover::cli
