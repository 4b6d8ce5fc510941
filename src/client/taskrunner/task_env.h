// The task environment (reference §8.1 and Nomad's taskenv): NOMAD_* variables for the
// alloc, task, resources and ports, job/group/task meta, the task's `env` block, and
// ${...} interpolation of strings (driver config, env values) against them and the
// node's attributes. Pure; no I/O.
#pragma once

#include <map>
#include <string>

#include "model/allocation.h"
#include "model/node.h"
#include "model/value.h"

namespace drover::taskrunner {

struct TaskEnvInput {
  const model::Allocation* alloc = nullptr;
  const model::Task* task = nullptr;
  const model::Node* node = nullptr;
  std::string region;
  std::string alloc_dir;    // value of NOMAD_ALLOC_DIR
  std::string task_dir;     // value of NOMAD_TASK_DIR
  std::string secrets_dir;  // value of NOMAD_SECRETS_DIR
  // Host environment passed through (raw_exec and exec share the host's), minus the
  // deny list.
  std::map<std::string, std::string> host_env;
  // Set by task hooks' prestart responses, in hook order (later hooks win).
  std::map<std::string, std::string> hook_env;
};

class TaskEnv {
 public:
  static TaskEnv Build(const TaskEnvInput& in);

  // The complete environment for the task process.
  const std::map<std::string, std::string>& env() const { return env_; }
  // Replaces every ${key} whose key is known (env var names, attr.*, node.*, meta.*,
  // env["X"]); unknown references stay verbatim, as Nomad leaves them.
  std::string Interpolate(const std::string& s) const;
  // Interpolates every string inside a value tree (keys too).
  model::Value InterpolateValue(const model::Value& v) const;

 private:
  std::optional<std::string> Lookup(const std::string& key) const;

  std::map<std::string, std::string> env_;
  std::map<std::string, std::string> node_vars_;  // attr.*, node.*, meta.*
};

// The current process environment minus Nomad's default deny list (secrets such as
// VAULT_TOKEN, NOMAD_TOKEN, CONSUL_TOKEN and AWS/GCP credentials).
std::map<std::string, std::string> HostEnvironment();

}  // namespace drover::taskrunner
