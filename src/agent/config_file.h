// Agent configuration files (`drover agent -config FILE|DIR`, repeatable): Nomad's
// agent configuration structure in HCL or JSON, read with the job file parser so that
// errors name file, line and column. A directory contributes its *.hcl and *.json
// files in lexical order; later files override earlier ones (scalars replaced, maps
// and blocks merged); command-line flags override files. See docs/agent-config.md.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "agent/agent.h"

namespace drover::agent {

// The files named by -config arguments, directories expanded. NotFound for a path
// that does not exist.
absl::StatusOr<std::vector<std::string>> ExpandConfigPaths(const std::vector<std::string>& paths);

// One file decoded against the schema (keys as in the file: snake_case).
absl::StatusOr<nlohmann::json> ReadConfigFile(const std::string& path, const std::string& text);

// Later wins: objects merge recursively, anything else is replaced.
void MergeConfig(nlohmann::json& base, const nlohmann::json& overlay);

// Applies a merged configuration to `config`. InvalidArgument for settings Drover
// cannot honour (several servers, serf, host volumes, unknown plugins or client
// options), naming the setting.
absl::Status ApplyConfig(const nlohmann::json& merged, AgentConfig& config);

// Checks the servers' RPC addresses ("host:port" or "[v6]:port"; a bare host gets the
// default RPC port 4647). InvalidArgument naming the first bad one.
absl::Status NormalizeServerAddresses(std::vector<std::string>& servers);

// All of the above for the -config arguments, in order.
absl::Status ApplyConfigFiles(const std::vector<std::string>& paths, AgentConfig& config);

}  // namespace drover::agent
