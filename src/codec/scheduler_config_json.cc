// The scheduler configuration (/v1/operator/scheduler/configuration).
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::codec {
namespace {

constexpr const char* kPreemptionFlags[] = {"SystemSchedulerEnabled", "SysBatchSchedulerEnabled",
                                            "BatchSchedulerEnabled", "ServiceSchedulerEnabled"};

// A boolean member, when present (null counts as absent).
absl::Status ReadBool(const Json& j, const char* key, bool& out, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return absl::OkStatus();
  if (!it->is_boolean())
    return absl::InvalidArgumentError(path + key + ": expected a boolean");
  out = it->get<bool>();
  return absl::OkStatus();
}

}  // namespace

Json ToJson(const model::SchedulerConfig& c) {
  Json preemption = Json::object();
  for (const char* flag : kPreemptionFlags)
    preemption[flag] = false;
  return {{"SchedulerAlgorithm", c.algorithm},
          {"PreemptionConfig", std::move(preemption)},
          {"MemoryOversubscriptionEnabled", c.memory_oversubscription},
          {"RejectJobRegistration", c.reject_job_registration},
          {"PauseEvalBroker", c.pause_eval_broker},
          {"CreateIndex", c.create_index},
          {"ModifyIndex", c.modify_index}};
}

absl::StatusOr<model::SchedulerConfig> SchedulerConfigFromJson(const Json& j,
                                                               model::SchedulerConfig base) {
  if (!j.is_object())
    return absl::InvalidArgumentError("SchedulerConfiguration: expected an object");
  model::SchedulerConfig c = std::move(base);
  if (auto it = j.find("SchedulerAlgorithm"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      return absl::InvalidArgumentError("SchedulerAlgorithm: expected a string");
    const std::string algorithm = it->get<std::string>();
    // Nomad takes "" as the default.
    if (!algorithm.empty() && algorithm != model::kSchedulerAlgorithmBinpack) {
      return absl::InvalidArgumentError("SchedulerAlgorithm: \"" + algorithm +
                                        "\" is not supported by Drover yet (only \"binpack\")");
    }
  }
  for (const auto& [key, field] :
       {std::pair{"MemoryOversubscriptionEnabled", &c.memory_oversubscription},
        std::pair{"RejectJobRegistration", &c.reject_job_registration},
        std::pair{"PauseEvalBroker", &c.pause_eval_broker}}) {
    if (absl::Status s = ReadBool(j, key, *field, ""); !s.ok())
      return s;
  }
  if (auto it = j.find("PreemptionConfig"); it != j.end() && !it->is_null()) {
    if (!it->is_object())
      return absl::InvalidArgumentError("PreemptionConfig: expected an object");
    for (const char* flag : kPreemptionFlags) {
      bool enabled = false;
      if (absl::Status s = ReadBool(*it, flag, enabled, "PreemptionConfig."); !s.ok())
        return s;
      if (enabled) {
        return absl::InvalidArgumentError(std::string("PreemptionConfig.") + flag +
                                          ": preemption is not supported by Drover yet");
      }
    }
  }
  return c;
}

// The stored record: the same fields, with the indexes.
absl::StatusOr<model::SchedulerConfig> StoredSchedulerConfigFromJson(const Json& j) {
  auto c = SchedulerConfigFromJson(j, model::SchedulerConfig{});
  if (!c.ok())
    return c.status();
  for (const auto& [key, field] :
       {std::pair{"CreateIndex", &c->create_index}, std::pair{"ModifyIndex", &c->modify_index}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned())
      return absl::InvalidArgumentError(std::string(key) + ": expected a non-negative integer");
    *field = it->get<uint64_t>();
  }
  return c;
}

}  // namespace drover::codec
