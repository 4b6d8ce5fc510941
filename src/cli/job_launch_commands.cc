// drover job periodic force and job dispatch (Nomad's command/job_periodic_force.go and
// job_dispatch.go).
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/monitor.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

namespace {

// What the CLI reads of a payload: the servers refuse more than 16 KiB with Nomad's
// message; beyond this the CLI does not read on.
constexpr size_t kMaxInputBytes = 1 << 20;

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::istream* in = &std::cin;
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file)
      return absl::NotFoundError(absl::StrCat("open ", path, ": no such file or unreadable"));
    in = &file;
  }
  std::string data(kMaxInputBytes + 1, '\0');
  in->read(data.data(), static_cast<std::streamsize>(data.size()));
  if (in->bad())
    return absl::DataLossError(absl::StrCat("read ", path, " failed"));
  data.resize(static_cast<size_t>(in->gcount()));
  if (data.size() > kMaxInputBytes)
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxInputBytes, " bytes"));
  return data;
}

}  // namespace

int RunJobPeriodicForce(const JobPeriodicForceOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> job_id = LookupJobId(client, ui, options.id);
  if (!job_id)
    return kExitError;
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", absl::StrCat("/v1/job/", PathEscape(*job_id), "/periodic/force"), "");
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error forcing periodic job ", Quote(*job_id), ": ",
                          response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  const std::string eval_id = result.ok() ? JsonString(*result, "EvalID") : "";
  if (options.detach || eval_id.empty()) {
    ui.Output("Force periodic successful");
    ui.Output(absl::StrCat("Evaluation ID: ", eval_id));
    return kExitOk;
  }
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

int RunJobDispatch(const JobDispatchOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  codec::Json request = {{"JobID", options.id}};
  if (!options.input.empty()) {
    absl::StatusOr<std::string> payload = ReadInput(options.input);
    if (!payload.ok()) {
      ui.Error(absl::StrCat("Error reading input data: ", payload.status().message()));
      return kExitError;
    }
    request["Payload"] = absl::Base64Escape(*payload);
  }
  codec::Json meta = codec::Json::object();
  for (const std::string& kv : options.meta) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      ui.Error(absl::StrCat("Invalid metadata option ", Quote(kv), ": want key=value"));
      return kExitError;
    }
    meta[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!meta.empty())
    request["Meta"] = std::move(meta);
  if (!options.idempotency_token.empty())
    request["IdempotencyToken"] = options.idempotency_token;
  if (!options.id_prefix_template.empty())
    request["IdPrefixTemplate"] = options.id_prefix_template;
  absl::StatusOr<HttpResponse> response = client.Do(
      "PUT", absl::StrCat("/v1/job/", PathEscape(options.id), "/dispatch"), codec::Dump(request));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Failed to dispatch job: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> result = codec::ParseJson(response->body);
  if (!result.ok()) {
    ui.Error(
        absl::StrCat("Failed to dispatch job: malformed response: ", result.status().message()));
    return kExitError;
  }
  const std::string eval_id = JsonString(*result, "EvalID");
  std::vector<std::string> basic = {
      absl::StrCat("Dispatched Job ID|", JsonString(*result, "DispatchedJobID"))};
  if (!eval_id.empty())
    basic.push_back(absl::StrCat("Evaluation ID|", Limit(eval_id, id_length)));
  ui.Output(FormatKV(basic));
  if (options.detach || eval_id.empty())
    return kExitOk;
  ui.Output("");
  EvalMonitor monitor(client, ui, id_length);
  return monitor.Monitor(eval_id);
}

}  // namespace drover::cli
