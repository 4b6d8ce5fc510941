// Commands for a cluster of agents (docs/cluster.md): drover server members, drover job
// allocs and drover alloc stop (Nomad's command/server_members.go, job_allocs.go and
// alloc_stop.go).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/listing.h"
#include "cli/lookup.h"
#include "cli/monitor.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

int RunServerMembers(const ServerMembersOptions& options, HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> members = GetJson(client, "/v1/agent/members");
  if (!members.ok()) {
    ui.Error(absl::StrCat("Error querying servers: ", members.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> leader = GetJson(client, "/v1/status/leader");
  const std::string leader_addr =
      leader.ok() && leader->is_string() ? leader->get<std::string>() : "";
  std::vector<std::string> rows = {options.detailed
                                       ? "Name|Address|Port|Tags"
                                       : "Name|Address|Port|Status|Leader|Raft Version|Build|"
                                         "Datacenter|Region"};
  const codec::Json empty = codec::Json::object();
  const codec::Json& list = members->contains("Members") ? (*members)["Members"] : empty;
  for (const auto& m : list) {
    const codec::Json& tags = m.contains("Tags") ? m["Tags"] : empty;
    const std::string addr = JsonString(m, "Addr");
    const bool is_leader =
        !leader_addr.empty() && leader_addr == addr + ":" + JsonString(tags, "port");
    if (options.detailed) {
      std::vector<std::string> kv;
      for (auto it = tags.begin(); it != tags.end(); ++it)
        kv.push_back(it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump()));
      std::sort(kv.begin(), kv.end());
      std::string joined;
      for (const std::string& s : kv)
        joined += (joined.empty() ? "" : ",") + s;
      rows.push_back(
          absl::StrCat(JsonString(m, "Name"), "|", addr, "|", JsonInt(m, "Port"), "|", joined));
      continue;
    }
    rows.push_back(absl::StrCat(JsonString(m, "Name"), "|", addr, "|", JsonInt(m, "Port"), "|",
                                JsonString(m, "Status"), "|", is_leader ? "true" : "false", "|",
                                JsonString(tags, "raft_vsn"), "|", JsonString(tags, "build"), "|",
                                JsonString(tags, "dc"), "|", JsonString(tags, "region")));
  }
  ui.Output(FormatList(rows));
  return kExitOk;
}

int RunJobAllocs(const JobAllocsOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> id = LookupJobId(client, ui, options.id);
  if (!id)
    return kExitError;
  absl::StatusOr<codec::Json> allocs = GetJson(
      client,
      absl::StrCat("/v1/job/", PathEscape(*id), "/allocations", options.all ? "?all=true" : ""));
  if (!allocs.ok()) {
    ui.Error(absl::StrCat("Error retrieving allocations: ", allocs.status().message()));
    return kExitError;
  }
  std::vector<AllocRow> rows = AllocRowsFromJson(*allocs);
  std::stable_sort(rows.begin(), rows.end(), [](const AllocRow& a, const AllocRow& b) {
    return a.create_index > b.create_index;
  });
  if (rows.empty()) {
    ui.Output("No allocations placed");
    return kExitOk;
  }
  ui.Output(FormatAllocList(rows, options.verbose, id_length, ui.Now()));
  return kExitOk;
}

int RunAllocStop(const AllocStopOptions& options, HttpClient& client, Ui& ui) {
  const size_t id_length = options.verbose ? kFullIdLength : kShortIdLength;
  std::optional<std::string> id = LookupAllocId(client, ui, options.id, options.verbose, id_length);
  if (!id)
    return kExitError;
  absl::StatusOr<HttpResponse> response =
      client.Do("PUT", absl::StrCat("/v1/allocation/", PathEscape(*id), "/stop",
                                    options.no_shutdown_delay ? "?no_shutdown_delay=true" : ""));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error stopping allocation: ", response.status().message()));
    return kExitError;
  }
  absl::StatusOr<codec::Json> body = codec::ParseJson(response->body);
  const std::string eval_id = body.ok() && body->is_object() ? JsonString(*body, "EvalID") : "";
  if (options.detach || eval_id.empty()) {
    ui.Output(eval_id);
    return kExitOk;
  }
  return EvalMonitor(client, ui, id_length).Monitor(eval_id);
}

int RunStatus(const JobStatusOptions& options, HttpClient& client, Ui& ui) {
  if (!options.id.empty())
    return RunJobStatus(options, client, ui);
  absl::StatusOr<codec::Json> members = GetJson(client, "/v1/agent/members");
  absl::StatusOr<codec::Json> leader = GetJson(client, "/v1/status/leader");
  absl::StatusOr<codec::Json> nodes = GetJson(client, "/v1/nodes");
  if (!members.ok() || !nodes.ok()) {
    ui.Error(absl::StrCat("Error querying the cluster: ",
                          (members.ok() ? nodes.status() : members.status()).message()));
    return kExitError;
  }
  const size_t servers = members->contains("Members") ? (*members)["Members"].size() : 0;
  int ready = 0, down = 0, ineligible = 0, draining = 0;
  for (const auto& n : *nodes) {
    const std::string status = JsonString(n, "Status");
    ready += status == "ready" ? 1 : 0;
    down += status == "down" ? 1 : 0;
    ineligible += JsonString(n, "SchedulingEligibility") == "ineligible" ? 1 : 0;
    draining += JsonBool(n, "Drain") ? 1 : 0;
  }
  const std::string leader_addr =
      leader.ok() && leader->is_string() ? leader->get<std::string>() : "none";
  ui.Output(
      FormatKV({absl::StrCat("Servers|", servers, " (leader ", leader_addr, ")"),
                absl::StrCat("Nodes|", nodes->size(), " (", ready, " ready, ", down, " down, ",
                             ineligible, " ineligible, ", draining, " draining)")}));
  ui.Output("");
  return RunJobStatus(options, client, ui);
}

}  // namespace drover::cli

namespace drover::cli {

int RunEventStream(const EventStreamOptions& options, HttpClient& client, Ui& ui) {
  std::string path = absl::StrCat("/v1/event/stream?index=", options.index);
  for (const std::string& topic : options.topics)
    absl::StrAppend(&path, "&topic=", QueryEscape(topic));
  std::string buffer;
  std::string ended;  // the servers' reason, when they end the stream
  // One line is at most this long: a server that sends more without a newline is cut off.
  constexpr size_t kMaxLine = 16 << 20;
  absl::Status s = client.Stream(path, [&](std::string_view data) {
    buffer.append(data);
    size_t at = 0;
    for (size_t nl; (nl = buffer.find('\n', at)) != std::string::npos; at = nl + 1) {
      const std::string_view line(buffer.data() + at, nl - at);
      if (line.empty() || line == "{}")
        continue;
      if (absl::StatusOr<codec::Json> j = codec::ParseJson(line);
          j.ok() && j->is_object() && j->contains("Error")) {
        ended = JsonString(*j, "Error");
        return false;
      }
      ui.Output(line);
    }
    buffer.erase(0, at);
    if (buffer.size() > kMaxLine) {
      ended = "an event line longer than 16 MiB";
      return false;
    }
    return true;
  });
  if (!s.ok() || !ended.empty()) {
    ui.Error(absl::StrCat("Error following events: ", s.ok() ? ended : s.message()));
    return kExitError;
  }
  return kExitOk;
}

}  // namespace drover::cli
