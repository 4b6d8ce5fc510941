// drover node eligibility -enable|-disable [-self] NODE: whether the scheduler may
// place new allocations on a node (Nomad's command/node_eligibility.go).
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/lookup.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

int RunNodeEligibility(const NodeEligibilityOptions& options, HttpClient& client, Ui& ui) {
  if (options.enable == options.disable) {
    ui.Error(options.enable ? "Only one of -enable or -disable flag can be set"
                            : "Either the '-enable' or '-disable' flag must be set");
    return kExitError;
  }
  if (options.self == !options.id.empty()) {
    ui.Error(options.self ? "A node ID and -self cannot both be given"
                          : "This command takes one argument: <node>");
    return kExitError;
  }
  std::optional<std::string> id =
      options.self ? LocalNodeId(client, ui) : LookupNodeId(client, ui, options.id, false, 8);
  if (!id)
    return kExitError;
  const std::string value = options.enable ? "eligible" : "ineligible";
  const codec::Json body = {{"NodeID", *id}, {"Eligibility", value}};
  absl::StatusOr<HttpResponse> response = client.Do(
      "PUT", absl::StrCat("/v1/node/", PathEscape(*id), "/eligibility"), codec::Dump(body));
  if (!response.ok()) {
    ui.Error(absl::StrCat("Error updating scheduling eligibility: ", response.status().message()));
    return kExitError;
  }
  ui.Output(
      absl::StrCat("Node ", Quote(*id), " scheduling eligibility set: ", value, " for scheduling"));
  return kExitOk;
}

}  // namespace drover::cli
