// ID-prefix lookups shared by the commands (GET /v1/<things>?prefix=...), with Nomad's
// messages. On failure each prints the error through `ui` and returns nullopt; the
// command then exits 1.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "cli/http_client.h"
#include "cli/ui.h"

namespace drover::cli {

// "No job(s) with prefix or id \"x\" found" / "Prefix matched multiple jobs" + list.
std::optional<std::string> LookupJobId(HttpClient& client, Ui& ui, const std::string& prefix);

// Also rejects one-character prefixes ("Identifier must contain at least two
// characters."). `verbose`/`id_length` shape the ambiguity listing.
std::optional<std::string> LookupAllocId(HttpClient& client, Ui& ui, const std::string& prefix,
                                         bool verbose, size_t id_length);
std::optional<std::string> LookupNodeId(HttpClient& client, Ui& ui, const std::string& prefix,
                                        bool verbose, size_t id_length);
// "Deployment ID \"x\" matched no deployments" / "Prefix matched multiple deployments"
// + list; one-character prefixes are refused as for allocations.
std::optional<std::string> LookupDeploymentId(HttpClient& client, Ui& ui, const std::string& prefix,
                                              size_t id_length);
// The node of the agent the CLI talks to (-self), from /v1/agent/self: "Local node ID
// unknown" when that agent runs no client.
std::optional<std::string> LocalNodeId(HttpClient& client, Ui& ui);

}  // namespace drover::cli
