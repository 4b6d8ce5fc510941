#include "codec/unsupported_fields.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include <nlohmann/json.hpp>

namespace drover::codec {

namespace {

using Fields = std::vector<std::pair<const char*, const char*>>;  // field, what it is

// Null, empty, "", 0 and false all mean "not used".
bool IsSet(const Json& j, const char* key) {
  if (!j.is_object()) {
    return false;
  }
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return false;
  }
  if (it->is_array() || it->is_object() || it->is_string()) {
    return !it->empty() && *it != "";
  }
  return *it != 0 && *it != false;
}

absl::Status Check(const Json& j, const std::string& path, const Fields& fields) {
  for (const auto& [field, what] : fields) {
    if (IsSet(j, field)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".", field, ": ", what, " not supported by Drover yet"));
    }
  }
  return absl::OkStatus();
}

const Fields kJobFields = {
    {"Affinities", "affinities are"},
    {"Spreads", "spread blocks are"},
    {"Multiregion", "multiregion jobs are"},
};
const Fields kGroupFields = {
    {"Affinities", "affinities are"},
    {"Spreads", "spread blocks are"},
    {"Volumes", "volumes are"},
    {"Services", "services are"},
    {"StopAfterClientDisconnect", "stop_after_client_disconnect is"},
    {"Disconnect", "disconnect blocks are"},
    {"Consul", "consul blocks are"},
};
const Fields kNetworkFields = {
    {"Hostname", "network hostnames are"},
    {"DNS", "network dns blocks are"},
};
const Fields kTaskFields = {
    {"Affinities", "affinities are"},
    {"Services", "services are"},
    {"Templates", "template blocks are"},
    {"Artifacts", "artifact blocks are"},
    {"VolumeMounts", "volume mounts are"},
    {"Vault", "Vault integration is"},
    {"CSIPluginConfig", "CSI plugins are"},
    {"Kind", "task kinds are"},
    {"ScalingPolicies", "task scaling policies (vertical autoscaling) are"},
    {"Identity", "workload identities are"},
    {"Identities", "workload identities are"},
    {"Consul", "consul blocks are"},
};

}  // namespace

absl::Status CheckSupportedJobFields(const Json& job) {
  if (absl::Status s = Check(job, "Job", kJobFields); !s.ok()) {
    return s;
  }
  const Json* groups = job.is_object() && job.contains("TaskGroups") ? &job["TaskGroups"] : nullptr;
  if (groups == nullptr || !groups->is_array()) {
    return absl::OkStatus();
  }
  for (size_t g = 0; g < groups->size(); ++g) {
    const Json& group = (*groups)[g];
    const std::string group_path = absl::StrCat("Job.TaskGroups[", g, "]");
    if (absl::Status s = Check(group, group_path, kGroupFields); !s.ok()) {
      return s;
    }
    if (group.is_object() && group.contains("Networks") && group["Networks"].is_array()) {
      for (size_t n = 0; n < group["Networks"].size(); ++n) {
        if (absl::Status s = Check(group["Networks"][n],
                                   absl::StrCat(group_path, ".Networks[", n, "]"), kNetworkFields);
            !s.ok()) {
          return s;
        }
      }
    }
    if (!group.is_object() || !group.contains("Tasks") || !group["Tasks"].is_array()) {
      continue;
    }
    for (size_t t = 0; t < group["Tasks"].size(); ++t) {
      const Json& task = group["Tasks"][t];
      const std::string task_path = absl::StrCat(group_path, ".Tasks[", t, "]");
      if (absl::Status s = Check(task, task_path, kTaskFields); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace drover::codec
