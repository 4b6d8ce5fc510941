#include "cli/job_file.h"

#include <cctype>
#include <cerrno>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/format.h"
#include <nlohmann/json.hpp>

#include "jobspec/jobspec.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace drover::cli {

namespace {

absl::StatusOr<std::string> ReadText(const std::string& file, absl::string_view what) {
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
        absl::StrCat("Error getting ", what, " from ", Quote(file), ": open ", file, ": ", reason));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("Error reading ", what, " ", Quote(file)));
  }
  return text.str();
}

// The job object of a file holding either {"Job": {...}} or a bare job.
absl::StatusOr<codec::Json> JobFromJsonText(const std::string& file, const std::string& text) {
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

std::vector<std::string> NomadVarEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    absl::string_view entry(*e);
    if (absl::ConsumePrefix(&entry, "NOMAD_VAR_")) {
      out.emplace_back(entry);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<codec::Json> LoadJobFile(const JobFileOptions& options) {
  absl::StatusOr<std::string> text = ReadText(options.file, "jobfile");
  if (!text.ok()) {
    return text.status();
  }
  // An HCL file cannot start with `{`, so content decides when the name does not.
  const bool json =
      options.json || absl::EndsWith(options.file, ".json") || jobspec::LooksLikeJson(*text);
  if (json) {
    if (!options.vars.empty() || !options.var_files.empty()) {
      return absl::InvalidArgumentError("-var and -var-file apply to HCL job files only");
    }
    return JobFromJsonText(options.file, *text);
  }
  jobspec::ParseOptions parse;
  parse.allow_fs = true;  // relative to the working directory, as in Nomad's CLI
  parse.var_environment = NomadVarEnvironment();
  parse.var_assignments = options.vars;
  for (const std::string& var_file : options.var_files) {
    absl::StatusOr<std::string> vars = ReadText(var_file, "variable file");
    if (!vars.ok()) {
      return vars.status();
    }
    parse.var_files.emplace_back(var_file, std::move(*vars));
  }
  const std::string name = options.file == "-" ? "<stdin>" : options.file;
  absl::StatusOr<codec::Json> job = jobspec::ParseJob(name, *text, parse);
  if (!job.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Error parsing job file from ", name, ":\n", job.status().message()));
  }
  return job;
}

}  // namespace drover::cli
