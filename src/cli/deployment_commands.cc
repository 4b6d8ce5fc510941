// drover deployment list/status/promote/fail/pause/resume, and the deployment monitor
// that `job run` ends with (Nomad's command/deployment_*.go).
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/monitor.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {
namespace {

constexpr char kDeploymentsPath[] = "/v1/deployments";

std::string DeploymentPath(const std::string& what, const std::string& id) {
  std::string path = "/v1/deployment/";
  if (!what.empty())
    path += what + "/";
  return path + PathEscape(id);
}

// Nomad's getDeployment: a full ID is read at once; a prefix must match exactly one
// deployment (lookup.h).
std::optional<codec::Json> FindDeployment(HttpClient& client, Ui& ui, const std::string& prefix,
                                          size_t id_length) {
  std::optional<std::string> id = prefix.size() == 36
                                      ? std::optional<std::string>(prefix)
                                      : LookupDeploymentId(client, ui, prefix, id_length);
  if (!id)
    return std::nullopt;
  absl::StatusOr<codec::Json> d = GetJson(client, DeploymentPath("", *id));
  if (!d.ok()) {
    ui.Error(absl::StrCat("Error retrieving deployment: ", d.status().message()));
    return std::nullopt;
  }
  return *d;
}

std::string GroupTime(const codec::Json& state) {
  if (JsonInt(state, "ProgressDeadline") == 0)
    return "N/A";
  return JsonString(state, "RequireProgressBy");
}

// An update's response: the evaluation to follow (empty: none).
std::string EvalOf(const absl::StatusOr<HttpResponse>& response) {
  absl::StatusOr<codec::Json> body = codec::ParseJson(response->body);
  return body.ok() ? JsonString(*body, "EvalID") : "";
}

int FollowEvalOrDetach(HttpClient& client, Ui& ui, const std::string& eval_id, bool detach,
                       size_t id_length) {
  if (eval_id.empty())
    return kExitOk;
  if (detach) {
    ui.Output(absl::StrCat("Evaluation ID: ", eval_id));
    return kExitOk;
  }
  ui.Output("");
  return EvalMonitor(client, ui, id_length).Monitor(eval_id);
}

}  // namespace

std::string FormatDeploymentList(const codec::Json& list, size_t id_length) {
  std::vector<std::string> rows{"ID|Job ID|Job Version|Status|Description"};
  for (const codec::Json& d : list) {
    rows.push_back(absl::StrCat(Limit(JsonString(d, "ID"), id_length), "|", JsonString(d, "JobID"),
                                "|", JsonUint(d, "JobVersion"), "|", JsonString(d, "Status"), "|",
                                JsonString(d, "StatusDescription")));
  }
  return FormatList(rows);
}

std::string FormatDeploymentStatus(const codec::Json& d, size_t id_length) {
  std::string out = FormatKV({
      absl::StrCat("ID|", Limit(JsonString(d, "ID"), id_length)),
      absl::StrCat("Job ID|", JsonString(d, "JobID")),
      absl::StrCat("Job Version|", JsonUint(d, "JobVersion")),
      absl::StrCat("Status|", JsonString(d, "Status")),
      absl::StrCat("Description|", JsonString(d, "StatusDescription")),
  });
  const std::string groups = FormatDeploymentGroups(d);
  return groups.empty() ? out : absl::StrCat(out, "\n\nDeployed\n", groups);
}

std::string FormatDeploymentGroups(const codec::Json& d) {
  const codec::Json* groups = JsonMember(d, "TaskGroups");
  if (groups == nullptr || !groups->is_object() || groups->empty())
    return "";
  bool auto_revert = false, canaries = false, deadline = false;
  for (const auto& [name, s] : groups->items()) {
    auto_revert = auto_revert || JsonBool(s, "AutoRevert");
    canaries = canaries || JsonInt(s, "DesiredCanaries") > 0;
    deadline = deadline || JsonInt(s, "ProgressDeadline") != 0;
  }
  std::string header = "Task Group|";
  if (auto_revert)
    header += "Auto Revert|";
  if (canaries)
    header += "Promoted|";
  header += "Desired|";
  if (canaries)
    header += "Canaries|";
  header += "Placed|Healthy|Unhealthy";
  if (deadline)
    header += "|Progress Deadline";
  std::vector<std::string> rows{header};
  for (const auto& [name, s] : groups->items()) {  // sorted: a JSON object's keys are
    std::string row = name + "|";
    if (auto_revert)
      absl::StrAppend(&row, JsonBool(s, "AutoRevert") ? "true" : "false", "|");
    if (canaries) {
      absl::StrAppend(
          &row,
          JsonInt(s, "DesiredCanaries") > 0 ? (JsonBool(s, "Promoted") ? "true" : "false") : "N/A",
          "|");
    }
    absl::StrAppend(&row, JsonInt(s, "DesiredTotal"), "|");
    if (canaries)
      absl::StrAppend(&row, JsonInt(s, "DesiredCanaries"), "|");
    absl::StrAppend(&row, JsonInt(s, "PlacedAllocs"), "|", JsonInt(s, "HealthyAllocs"), "|",
                    JsonInt(s, "UnhealthyAllocs"));
    if (deadline)
      absl::StrAppend(&row, "|", GroupTime(s));
    rows.push_back(std::move(row));
  }
  return FormatList(rows);
}

int MonitorDeployment(HttpClient& client, Ui& ui, const std::string& id, size_t id_length) {
  ui.Output(absl::StrCat("==> ", FormatTime(ui.Now()), ": Monitoring deployment ",
                         Quote(Limit(id, id_length))));
  uint64_t index = 0;
  std::string last;
  while (true) {
    const auto poll_start = std::chrono::steady_clock::now();
    std::string path = DeploymentPath("", id);
    if (index > 0)
      absl::StrAppend(&path, "?index=", index, "&wait=", kBlockingWait);
    absl::StatusOr<HttpResponse> response = client.Do("GET", path, {}, kRequestTimeout);
    if (!response.ok()) {
      ui.Error(absl::StrCat("Error fetching deployment: ", response.status().message()));
      return kExitError;
    }
    absl::StatusOr<codec::Json> d = codec::ParseJson(response->body);
    if (!d.ok()) {
      ui.Error(absl::StrCat("Error fetching deployment: ", d.status().message()));
      return kExitError;
    }
    const std::string status = FormatDeploymentStatus(*d, id_length);
    if (status != last) {
      ui.Output(absl::StrCat("\n", FormatTime(ui.Now()), "\n", status));
      last = status;
    }
    const std::string state = JsonString(*d, "Status");
    if (state == "successful")
      return kExitOk;
    if (state == "failed" || state == "cancelled" || state == "blocked") {
      // An auto-revert starts the deployment of the version rolled back to: follow it.
      const std::string job = JsonString(*d, "JobID");
      if (state == "failed" &&
          JsonString(*d, "StatusDescription").find("rolling back to job version") !=
              std::string::npos) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        absl::StatusOr<codec::Json> latest =
            GetJson(client, absl::StrCat("/v1/job/", PathEscape(job), "/deployment?namespace=",
                                         QueryEscape(JsonString(*d, "Namespace"))));
        if (latest.ok() && latest->is_object() && JsonString(*latest, "ID") != id) {
          MonitorDeployment(client, ui, JsonString(*latest, "ID"), id_length);
        }
      }
      return kExitError;  // as Nomad: only a successful deployment exits 0
    }
    // A query that did not block (an agent without an index) is not repeated at once.
    if (response->index <= index) {
      const auto elapsed = std::chrono::steady_clock::now() - poll_start;
      if (elapsed < EvalMonitor::kMinPollInterval)
        std::this_thread::sleep_for(EvalMonitor::kMinPollInterval - elapsed);
    }
    index = response->index;
  }
}

int RunDeploymentList(const DeploymentOptions& o, HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> list = GetJson(client, kDeploymentsPath);
  if (!list.ok()) {
    ui.Error(absl::StrCat("Error retrieving deployments: ", list.status().message()));
    return kExitError;
  }
  if (o.json) {
    ui.Output(codec::Dump(*list, /*pretty=*/true));
    return kExitOk;
  }
  if (!list->is_array() || list->empty()) {
    ui.Output("No deployments found");
    return kExitOk;
  }
  ui.Output(FormatDeploymentList(*list, o.verbose ? 36 : 8));
  return kExitOk;
}

int RunDeploymentStatus(const DeploymentOptions& o, HttpClient& client, Ui& ui) {
  if (o.id.empty())
    return RunDeploymentList(o, client, ui);
  const size_t id_length = o.verbose ? 36 : 8;
  std::optional<codec::Json> d = FindDeployment(client, ui, o.id, id_length);
  if (!d)
    return kExitError;
  if (o.json) {
    ui.Output(codec::Dump(*d, /*pretty=*/true));
    return kExitOk;
  }
  if (o.monitor)
    return MonitorDeployment(client, ui, JsonString(*d, "ID"), id_length);
  ui.Output(FormatDeploymentStatus(*d, id_length));
  return kExitOk;
}

int RunDeploymentWrite(const DeploymentOptions& o, const std::string& op, HttpClient& client,
                       Ui& ui) {
  const size_t id_length = o.verbose ? 36 : 8;
  std::optional<codec::Json> d = FindDeployment(client, ui, o.id, id_length);
  if (!d)
    return kExitError;
  const std::string id = JsonString(*d, "ID");
  codec::Json body = {{"DeploymentID", id}};
  std::string path;
  std::string what;
  if (op == "promote") {
    path = DeploymentPath("promote", id);
    body["All"] = o.groups.empty();
    body["Groups"] = o.groups;
    what = "promoting";
  } else if (op == "fail") {
    path = DeploymentPath("fail", id);
    what = "failing";
  } else {
    path = DeploymentPath("pause", id);
    body["Pause"] = op == "pause";
    what = op == "pause" ? "pausing" : "resuming";
  }
  absl::StatusOr<HttpResponse> response = client.Do("PUT", path, codec::Dump(body));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error ", what, " deployment: ", response.status().message()));
    return kExitError;
  }
  if (op == "pause") {
    ui.Output(absl::StrCat("Deployment ", Quote(id), " paused"));
    return kExitOk;
  }
  if (op == "resume")
    ui.Output(absl::StrCat("Deployment ", Quote(id), " resumed"));
  if (op == "fail") {
    absl::StatusOr<codec::Json> r = codec::ParseJson(response->body);
    const codec::Json* reverted = r.ok() ? JsonMember(*r, "RevertedJobVersion") : nullptr;
    if (reverted != nullptr && reverted->is_number()) {
      ui.Output(absl::StrCat("Deployment ", Quote(id), " failed. Auto-reverted to job version ",
                             reverted->get<uint64_t>(), "."));
    } else {
      ui.Output(absl::StrCat("Deployment ", Quote(id), " failed"));
    }
  }
  return FollowEvalOrDetach(client, ui, EvalOf(response), o.detach, id_length);
}

}  // namespace drover::cli
