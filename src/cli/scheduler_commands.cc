// drover operator scheduler get-config/set-config and drover eval delete (Nomad's
// command/operator_scheduler_*.go and eval_delete.go).
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

constexpr char kConfigPath[] = "/v1/operator/scheduler/configuration";

absl::StatusOr<codec::Json> GetSchedulerConfig(HttpClient& client) {
  absl::StatusOr<codec::Json> reply = GetJson(client, kConfigPath);
  if (!reply.ok())
    return reply.status();
  const codec::Json* config = JsonMember(*reply, "SchedulerConfig");
  if (config == nullptr || !config->is_object())
    return absl::InternalError("malformed response: no SchedulerConfig");
  return *config;
}

std::string Bool(const codec::Json& j, std::string_view key) {
  return JsonBool(j, key) ? "true" : "false";
}

}  // namespace

int RunSchedulerGetConfig(bool json, HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> config = GetSchedulerConfig(client);
  if (!config.ok()) {
    ui.Error(absl::StrCat("Error querying scheduler configuration: ", config.status().message()));
    return kExitError;
  }
  if (json) {
    ui.Output(codec::Dump(*config, /*pretty=*/true));
    return kExitOk;
  }
  const codec::Json* preemption = JsonMember(*config, "PreemptionConfig");
  const codec::Json none = codec::Json::object();
  const codec::Json& p = preemption != nullptr ? *preemption : none;
  ui.Output(FormatKV({
      absl::StrCat("Scheduler Algorithm|", JsonString(*config, "SchedulerAlgorithm")),
      absl::StrCat("Memory Oversubscription|", Bool(*config, "MemoryOversubscriptionEnabled")),
      absl::StrCat("Reject Job Registration|", Bool(*config, "RejectJobRegistration")),
      absl::StrCat("Pause Eval Broker|", Bool(*config, "PauseEvalBroker")),
      absl::StrCat("Preemption System Scheduler|", Bool(p, "SystemSchedulerEnabled")),
      absl::StrCat("Preemption Service Scheduler|", Bool(p, "ServiceSchedulerEnabled")),
      absl::StrCat("Preemption Batch Scheduler|", Bool(p, "BatchSchedulerEnabled")),
      absl::StrCat("Preemption SysBatch Scheduler|", Bool(p, "SysBatchSchedulerEnabled")),
      absl::StrCat("Modify Index|", JsonUint(*config, "ModifyIndex")),
  }));
  return kExitOk;
}

int RunSchedulerSetConfig(const SchedulerSetConfigOptions& options, HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> config = GetSchedulerConfig(client);
  if (!config.ok()) {
    ui.Error(absl::StrCat("Error querying scheduler configuration: ", config.status().message()));
    return kExitError;
  }
  // What the flags name changes; the rest is sent back as it was.
  codec::Json update = *config;
  if (options.algorithm)
    update["SchedulerAlgorithm"] = *options.algorithm;
  if (options.memory_oversubscription)
    update["MemoryOversubscriptionEnabled"] = *options.memory_oversubscription;
  if (options.reject_job_registration)
    update["RejectJobRegistration"] = *options.reject_job_registration;
  if (options.pause_eval_broker)
    update["PauseEvalBroker"] = *options.pause_eval_broker;
  for (const auto& [field, enabled] : options.preemption)
    update["PreemptionConfig"][field] = enabled;
  std::string path = kConfigPath;
  if (options.check_index)
    absl::StrAppend(&path, "?cas=", *options.check_index);
  absl::StatusOr<HttpResponse> response = client.Do("PUT", path, codec::Dump(update));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error setting scheduler configuration: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  if (options.check_index && result.ok() && !JsonBool(*result, "Updated")) {
    ui.Error("Scheduler configuration could not be atomically updated, please try again");
    return kExitError;
  }
  ui.Output("Scheduler configuration updated!");
  return kExitOk;
}

int RunEvalDelete(const EvalDeleteOptions& options, HttpClient& client, Ui& ui) {
  if (options.id.empty() == options.filter.empty()) {
    ui.Error(
        "Error validating command args: exactly one of an evaluation ID and -filter is "
        "required");
    return kExitError;
  }
  absl::StatusOr<codec::Json> config = GetSchedulerConfig(client);
  if (!config.ok()) {
    ui.Error(absl::StrCat("Error querying scheduler configuration: ", config.status().message()));
    return kExitError;
  }
  if (!JsonBool(*config, "PauseEvalBroker")) {
    ui.Error(
        "Eval broker is not paused\n\n"
        "To delete evaluations you must first pause the eval broker by running "
        "\"drover operator scheduler set-config -pause-eval-broker=true\"\n"
        "After the deletion is complete, unpause the eval broker by running "
        "\"drover operator scheduler set-config -pause-eval-broker=false\"");
    return kExitError;
  }
  codec::Json request = codec::Json::object();
  if (!options.id.empty())
    request["EvalIDs"] = codec::Json::array({options.id});
  else
    request["Filter"] = options.filter;
  absl::StatusOr<HttpResponse> response =
      client.Do("DELETE", "/v1/evaluations", codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error deleting evaluations: ", response.status().message()));
    return kExitError;
  }
  ui.Output("Successfully deleted 1 evaluation");
  return kExitOk;
}

}  // namespace drover::cli
