// drover node drain -enable|-disable [flags] NODE, and -monitor alone: moves a node's
// allocations elsewhere and follows the drain (Nomad's command/node_drain.go).
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

#include "common/go_duration.h"

namespace drover::cli {
namespace {

constexpr std::chrono::milliseconds kMonitorWait{2000};

// Nomad's confirmation: an exact "y" goes on (nullopt); nothing or "n..." cancels
// (exit 0), "y..." asks for an exact "y" (exit 0), anything else is an error.
std::optional<int> Confirm(Ui& ui, const std::string& question) {
  const std::string answer = ui.Ask(question + " [y/N]");
  if (answer == "y")
    return std::nullopt;
  const char first = answer.empty() ? 'n' : std::tolower(static_cast<unsigned char>(answer[0]));
  if (first == 'n') {
    ui.Output("Canceling drain toggle");
    return kExitOk;
  }
  if (first == 'y') {
    ui.Output("For confirmation, an exact ‘y’ is required.");
    return kExitOk;
  }
  ui.Output("No confirmation detected. For confirmation, an exact ‘y’ is required.");
  return kExitError;
}

void Say(Ui& ui, const std::string& line) {
  ui.Output(absl::StrCat(FormatTime(ui.Now()), ": ", line));
}

bool ClientTerminal(const codec::Json& a) {
  const std::string s = JsonString(a, "ClientStatus");
  return s == "complete" || s == "failed" || s == "lost";
}

bool IsSystemAlloc(const codec::Json& a) {
  const codec::Json* job = JsonMember(a, "Job");
  const std::string type = job != nullptr && job->is_object() ? JsonString(*job, "Type") : "";
  return type == "system" || type == "sysbatch";
}

}  // namespace

int MonitorDrain(HttpClient& client, Ui& ui, const std::string& node_id) {
  Say(ui, "Ctrl-C to stop monitoring: will not cancel the node drain");
  const std::string node_path = absl::StrCat("/v1/node/", PathEscape(node_id));
  std::map<std::string, std::string> seen;  // alloc -> what was said of it last
  uint64_t index = 0;
  bool drain_done = false;
  bool ignore_system = false;
  for (;;) {
    absl::StatusOr<HttpResponse> allocs = client.Do(
        "GET",
        absl::StrCat(node_path, "/allocations?index=", index, "&wait=", kMonitorWait.count(), "ms"),
        "", kMonitorWait + std::chrono::seconds(10));
    absl::StatusOr<codec::Json> node = GetJson(client, node_path);
    if (!allocs.ok() || !node.ok()) {
      ui.Error(absl::StrCat("Error monitoring node drain: ",
                            (!allocs.ok() ? allocs.status() : node.status()).message()));
      return kExitError;
    }
    index = allocs->index;
    absl::StatusOr<codec::Json> list = codec::ParseJson(allocs->body);
    if (!list.ok() || !list->is_array() || !node->is_object()) {
      ui.Error("Error monitoring node drain: unexpected answer from the agent");
      return kExitError;
    }
    const codec::Json& strategy = (*node)["DrainStrategy"];
    const codec::Json& last_drain = (*node)["LastDrain"];
    if (strategy.is_object())
      ignore_system = JsonBool(strategy, "IgnoreSystemJobs");
    else if (last_drain.is_object())  // done before the first look
      ignore_system = JsonBool(last_drain, "IgnoreSystemJobs");
    bool all_stopped = true;
    const bool first_poll = seen.empty();
    for (const codec::Json& a : *list) {
      const std::string id = JsonString(a, "ID");
      std::string now;
      if (ClientTerminal(a)) {
        now = absl::StrCat("status ", JsonString(a, "ClientStatus"));
      } else if (JsonString(a, "DesiredStatus") == "stop") {
        now = "draining";
      } else if (const codec::Json* t = JsonMember(a, "DesiredTransition");
                 t != nullptr && t->is_object() && JsonBool(*t, "Migrate")) {
        now = "marked for migration";
      }
      if (!ClientTerminal(a) && !(ignore_system && IsSystemAlloc(a)))
        all_stopped = false;
      if (now.empty() || seen[id] == now)
        continue;
      seen[id] = now;
      // What had finished before the monitor started is not news.
      if (!first_poll || !ClientTerminal(a))
        Say(ui, absl::StrCat("Alloc ", Quote(id), " ", now));
    }
    if (!drain_done && !strategy.is_object()) {
      drain_done = true;
      const codec::Json& last = (*node)["LastDrain"];
      const std::string status = last.is_object() ? JsonString(last, "Status") : "";
      if (status == "canceled") {
        Say(ui, absl::StrCat("Drain canceled for node ", Quote(node_id)));
        return kExitOk;
      }
      if (status != "complete") {
        Say(ui, absl::StrCat("No drain strategy set for node ", Quote(node_id)));
        return kExitOk;
      }
      Say(ui, absl::StrCat("Drain complete for node ", Quote(node_id)));
    }
    if (drain_done && all_stopped) {
      Say(ui, absl::StrCat("All allocations on node ", Quote(node_id), " have stopped"));
      return kExitOk;
    }
  }
}

namespace {

// The flags checked against each other, as Nomad's command does; "" when they agree.
std::string FlagConflict(const NodeDrainOptions& o) {
  if (o.enable && o.disable)
    return "Only one of -enable or -disable flag can be set";
  if (!o.enable && !o.disable && !o.monitor)
    return "Either the '-enable' or '-disable' flag must be set, unless using '-monitor'";
  if (o.monitor && (o.enable || o.disable))
    return "The -monitor flag cannot be used with the '-enable' or '-disable' flags";
  const int deadline_flags =
      (o.deadline.has_value() ? 1 : 0) + (o.force ? 1 : 0) + (o.no_deadline ? 1 : 0);
  if (deadline_flags > 1)
    return "Only one of -deadline, -force and -no-deadline can be set";
  if (o.disable && (deadline_flags > 0 || o.ignore_system))
    return "-deadline, -force, -no-deadline and -ignore-system only apply with -enable";
  if (o.self == !o.id.empty())
    return o.self ? "A node ID and -self cannot both be given"
                  : "This command takes one argument: <node>";
  return "";
}

// The drain's deadline: -deadline, -force (Nomad's -1s), -no-deadline (0), or 1h.
absl::StatusOr<common::Duration> DrainDeadline(const NodeDrainOptions& o) {
  if (o.deadline) {
    absl::StatusOr<common::Duration> d = common::ParseGoDuration(*o.deadline);
    if (!d.ok() || *d <= common::Duration::zero())
      return absl::InvalidArgumentError(
          absl::StrCat("Failed to parse deadline ", Quote(*o.deadline),
                       ": a positive duration is required (e.g. 30m, 1h)"));
    return *d;
  }
  if (o.force)
    return -std::chrono::seconds(1);
  if (o.no_deadline)
    return common::Duration::zero();
  return std::chrono::hours(1);  // Nomad's default
}

// -meta k=v pairs and -m as "message".
absl::StatusOr<std::map<std::string, std::string>> DrainMeta(const NodeDrainOptions& o) {
  std::map<std::string, std::string> meta;
  for (const std::string& kv : o.meta) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return absl::InvalidArgumentError(
          absl::StrCat("Error parsing -meta ", Quote(kv), ": expected key=value"));
    meta[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!o.message.empty())
    meta["message"] = o.message;
  return meta;
}

}  // namespace

int RunNodeDrain(const NodeDrainOptions& options, HttpClient& client, Ui& ui) {
  if (std::string conflict = FlagConflict(options); !conflict.empty()) {
    ui.Error(conflict);
    return kExitError;
  }
  absl::StatusOr<common::Duration> deadline = DrainDeadline(options);
  absl::StatusOr<std::map<std::string, std::string>> meta = DrainMeta(options);
  if (!deadline.ok() || !meta.ok()) {
    ui.Error(std::string((!deadline.ok() ? deadline.status() : meta.status()).message()));
    return kExitError;
  }

  std::optional<std::string> id =
      options.self ? LocalNodeId(client, ui) : LookupNodeId(client, ui, options.id, false, 8);
  if (!id)
    return kExitError;
  if (options.monitor)
    return MonitorDrain(client, ui, *id);
  if (!options.yes) {
    if (std::optional<int> stop = Confirm(
            ui, absl::StrCat("Are you sure you want to ", options.enable ? "enable" : "disable",
                             " drain mode for node ", Quote(*id), "?")))
      return *stop;
  }

  codec::Json body = {{"NodeID", *id}, {"Meta", *meta}};
  if (options.enable) {
    body["DrainSpec"] = {{"Deadline", deadline->count()},
                         {"IgnoreSystemJobs", options.ignore_system}};
  } else {
    body["DrainSpec"] = nullptr;
    body["MarkEligible"] = !options.keep_ineligible;
  }
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", absl::StrCat("/v1/node/", PathEscape(*id), "/drain"), codec::Dump(body));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error updating drain specification: ", response.status().message()));
    return kExitError;
  }
  if (!options.enable) {
    ui.Output(absl::StrCat(FormatTime(ui.Now()), ": Node ", Quote(*id), " drain strategy unset"));
    return kExitOk;
  }
  ui.Output(absl::StrCat(FormatTime(ui.Now()), ": Node ", Quote(*id), " drain strategy set"));
  if (options.detach)
    return kExitOk;
  return MonitorDrain(client, ui, *id);
}

}  // namespace drover::cli
