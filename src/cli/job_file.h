// Reading a job file for `job run`, `job validate` and `job plan`-style commands: HCL
// (parsed here, with file() and templatefile() available, as Nomad's CLI does) or JSON
// (`{"Job": {...}}` or a bare job), chosen by -json, a .json extension or content
// starting with `{`.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "codec/json.h"

namespace drover::cli {

struct JobFileOptions {
  std::string file;  // "-" reads stdin
  bool json = false;
  std::vector<std::string> vars;       // -var NAME=VALUE
  std::vector<std::string> var_files;  // -var-file FILE
};

// The bare job, or an error in Nomad's words ("Error parsing job file from FILE:\n...").
absl::StatusOr<codec::Json> LoadJobFile(const JobFileOptions& options);

}  // namespace drover::cli
