// Nomad job files (HCL2) → the job in the API's JSON form, as Nomad's
// `/v1/jobs/parse` returns it: only the fields the file sets, durations in
// nanoseconds, sizes in MB, defaults left to the server's canonicalization.
//
// A file holds `variable` blocks (type, default, description, sensitive, validation),
// `locals` blocks and exactly one `job` block. See docs/jobspec.md for the supported
// blocks and how they map to the API.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

#include "jobspec/eval.h"

namespace drover::jobspec {

struct ParseOptions {
  // Variable values, lowest precedence first: "name=value" from NOMAD_VAR_name
  // environment variables (ignored for undeclared names), var files (name, HCL or JSON
  // content) in order, then "name=value" assignments (-var), which override them all.
  std::vector<std::string> var_environment;
  std::vector<std::pair<std::string, std::string>> var_files;
  std::vector<std::string> var_assignments;
  // file(), fileexists() and templatefile() (CLI only; relative to base_dir).
  bool allow_fs = false;
  std::string base_dir = ".";
};

absl::StatusOr<Json> ParseJob(const std::string& file_name, const std::string& source,
                              const ParseOptions& options);

// Whether text is meant as JSON rather than HCL: its first non-blank character is `{`,
// which cannot start an HCL file. Used by the CLI to accept either in `job run`.
bool LooksLikeJson(const std::string& text);

}  // namespace drover::jobspec
