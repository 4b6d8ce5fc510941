// drover job history, job revert, job eval and job scale (Nomad's
// command/job_history.go, job_revert.go, job_eval.go and job_scale.go).
#include <charconv>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/diff_format.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/monitor.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

std::optional<uint64_t> ParseVersion(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return std::nullopt;
  return v;
}

// One version as Nomad prints it: Version, Stable, Submit Date, then its diff to the
// version before it (-p) and the whole job (-full).
std::string FormatVersion(const codec::Json& job, const codec::Json* diff, bool full) {
  // The diff and the job go below their keys: placeholders keep the columns aligned.
  constexpr char kBelow[] = "\x01";
  std::vector<std::string> rows = {
      absl::StrCat("Version|", JsonUint(job, "Version")),
      absl::StrCat("Stable|", JsonBool(job, "Stable") ? "true" : "false"),
      absl::StrCat("Submit Date|", FormatUnixNano(JsonInt(job, "SubmitTime")))};
  std::vector<std::string> below;
  if (diff != nullptr) {
    std::string text = FormatJobDiff(*diff, /*verbose=*/false);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
      text.pop_back();
    rows.push_back(absl::StrCat("Diff|", kBelow));
    below.push_back(std::move(text));
  }
  if (full) {
    rows.push_back(absl::StrCat("Full|JSON Job:", kBelow));
    below.push_back(codec::Dump(job, /*pretty=*/true));
  }
  std::string out = FormatKV(rows);
  for (const std::string& text : below) {
    const size_t at = out.find(kBelow);
    if (at == std::string::npos)
      break;
    out.replace(at, 1, "\n" + text);
  }
  return out;
}

// After a write that may have created an evaluation: nothing without one; its ID with
// -detach; otherwise the evaluation monitored to its end.
int FollowEval(const std::string& eval_id, bool detach, size_t id_length, HttpClient& client,
               Ui& ui) {
  if (eval_id.empty())
    return kExitOk;
  if (detach) {
    ui.Output(absl::StrCat("Evaluation ID: ", eval_id));
    return kExitOk;
  }
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

}  // namespace

int RunJobHistory(const JobHistoryOptions& options, HttpClient& client, Ui& ui) {
  std::optional<uint64_t> only;
  if (!options.version.empty()) {
    only = ParseVersion(options.version);
    if (!only) {
      ui.Error(absl::StrCat("Error parsing version value: ", options.version));
      return kExitError;
    }
  }
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id)
    return kExitError;
  absl::StatusOr<codec::Json> reply =
      GetJson(client, absl::StrCat("/v1/job/", PathEscape(*job_id),
                                   "/versions?diffs=", options.diff ? "true" : "false"));
  if (!reply.ok()) {
    ui.Error(absl::StrCat("Error retrieving job versions: ", reply.status().message()));
    return kExitError;
  }
  const codec::Json* versions = JsonMember(*reply, "Versions");
  const codec::Json* diffs = JsonMember(*reply, "Diffs");
  if (versions == nullptr || !versions->is_array()) {
    ui.Error("Error retrieving job versions: malformed response");
    return kExitError;
  }
  // Diffs[i] is Versions[i+1] -> Versions[i]; the oldest version has none.
  auto diff_of = [&](size_t i) -> const codec::Json* {
    if (!options.diff || diffs == nullptr || !diffs->is_array() || i >= diffs->size())
      return nullptr;
    return &(*diffs)[i];
  };
  if (only) {
    for (size_t i = 0; i < versions->size(); ++i) {
      const codec::Json& v = (*versions)[i];
      if (JsonUint(v, "Version") != *only)
        continue;
      ui.Output(options.json ? codec::Dump(v, /*pretty=*/true)
                             : FormatVersion(v, diff_of(i), options.full));
      return kExitOk;
    }
    ui.Error(absl::StrCat("Job ", Quote(*job_id), " has no version ", *only,
                          " (only the most recent versions are kept)"));
    return kExitError;
  }
  if (options.json) {
    ui.Output(codec::Dump(*versions, /*pretty=*/true));
    return kExitOk;
  }
  for (size_t i = 0; i < versions->size(); ++i) {
    if (i > 0)
      ui.Output("");
    ui.Output(FormatVersion((*versions)[i], diff_of(i), options.full));
  }
  return kExitOk;
}

int RunJobRevert(const JobRevertOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<uint64_t> version = ParseVersion(options.version);
  if (!version) {
    ui.Error(
        absl::StrCat("Failed to parse job-version flag: invalid version ", Quote(options.version)));
    return kExitError;
  }
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id)
    return kExitError;
  codec::Json request = {{"JobID", *job_id}, {"JobVersion", *version}};
  absl::StatusOr<HttpResponse> response = client.Do(
      "PUT", absl::StrCat("/v1/job/", PathEscape(*job_id), "/revert"), codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error retrieving job versions: ", response.status().message()));
    return kExitError;
  }
  std::string eval_id;
  if (absl::StatusOr<codec::Json> result = codec::ParseJson(response->body); result.ok())
    eval_id = JsonString(*result, "EvalID");
  return FollowEval(eval_id, options.detach, id_length, client, ui);
}

int RunJobScale(const JobScaleOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  if (options.args.empty() || options.args.size() > 2) {
    ui.Error("This command takes two or three arguments: <job> [<group>] <count>");
    return kExitError;
  }
  const std::string& count_text = options.args.back();
  int64_t count = 0;
  auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (count_text.empty() || ec != std::errc() || end != count_text.data() + count_text.size()) {
    ui.Error(absl::StrCat("Failed to convert count string to int: ", Quote(count_text)));
    return kExitError;
  }
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id)
    return kExitError;
  std::string group;
  if (options.args.size() == 2) {
    group = options.args[0];
  } else {
    absl::StatusOr<codec::Json> job =
        GetJson(client, absl::StrCat("/v1/job/", PathEscape(*job_id)));
    if (!job.ok()) {
      ui.Error(absl::StrCat("Error querying job: ", job.status().message()));
      return kExitError;
    }
    const codec::Json* groups = JsonMember(*job, "TaskGroups");
    if (groups == nullptr || !groups->is_array() || groups->size() != 1) {
      ui.Error("Group name required");
      return kExitError;
    }
    group = JsonString((*groups)[0], "Name");
  }
  codec::Json request = {{"Count", count},
                         {"Target", {{"Job", *job_id}, {"Group", group}}},
                         {"Message", "submitted using the Drover CLI"}};
  absl::StatusOr<HttpResponse> response = client.Do(
      "PUT", absl::StrCat("/v1/job/", PathEscape(*job_id), "/scale"), codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error submitting scaling request: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  if (!result.ok()) {
    ui.Error("Error submitting scaling request: malformed response");
    return kExitError;
  }
  if (const std::string warnings = JsonString(*result, "Warnings"); !warnings.empty())
    ui.Output(absl::StrCat("Job Warnings:\n", warnings, "\n"));
  return FollowEval(JsonString(*result, "EvalID"), options.detach, id_length, client, ui);
}

int RunJobEval(const JobEvalOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id)
    return kExitError;
  codec::Json request = {{"JobID", *job_id},
                         {"EvalOptions", {{"ForceReschedule", options.force_reschedule}}}};
  absl::StatusOr<HttpResponse> response = client.Do(
      "PUT", absl::StrCat("/v1/job/", PathEscape(*job_id), "/evaluate"), codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error evaluating job: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  const std::string eval_id = result.ok() ? JsonString(*result, "EvalID") : "";
  if (eval_id.empty()) {
    ui.Error("Error evaluating job: the response names no evaluation");
    return kExitError;
  }
  if (options.detach) {
    ui.Output(absl::StrCat("Created eval ID: ", Quote(Limit(eval_id, id_length)), " "));
    return kExitOk;
  }
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

}  // namespace drover::cli
