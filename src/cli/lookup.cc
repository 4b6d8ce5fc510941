#include "cli/lookup.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/json_fields.h"
#include "cli/listing.h"
#include "cli/prefix_match.h"
#include "cli/url.h"
#include <nlohmann/json.hpp>

namespace drover::cli {

namespace {

// GETs a prefix list and resolves `prefix` against the IDs in it. `error_prefix` leads
// the message for a failed request ("Error querying job").
struct ListLookup {
  codec::Json items = codec::Json::array();
  PrefixMatch match;
};

std::optional<ListLookup> FetchAndResolve(HttpClient& client, Ui& ui, const std::string& list_path,
                                          const std::string& prefix,
                                          std::string_view error_prefix) {
  absl::StatusOr<codec::Json> list =
      GetJson(client, absl::StrCat(list_path, "?prefix=", QueryEscape(prefix)));
  if (!list.ok()) {
    ui.Error(absl::StrCat(std::string(error_prefix), ": ", list.status().message()));
    return std::nullopt;
  }
  ListLookup out;
  if (list->is_array()) {
    out.items = std::move(*list);
  }
  std::vector<std::string> ids;
  ids.reserve(out.items.size());
  for (const auto& item : out.items) {
    ids.push_back(JsonString(item, "ID"));
  }
  out.match = ResolvePrefix(prefix, ids);
  return out;
}

}  // namespace

std::optional<std::string> LookupJobId(HttpClient& client, Ui& ui, const std::string& prefix) {
  std::optional<ListLookup> found =
      FetchAndResolve(client, ui, "/v1/jobs", prefix, "Error querying job");
  if (!found) {
    return std::nullopt;
  }
  switch (found->match.kind) {
    case PrefixMatch::Kind::kNone:
      ui.Error(absl::StrCat("No job(s) with prefix or id ", Quote(prefix), " found"));
      return std::nullopt;
    case PrefixMatch::Kind::kAmbiguous: {
      std::vector<JobRow> rows;
      for (size_t i : found->match.indexes) {
        rows.push_back(JobRowFromJson(found->items[i]));
      }
      ui.Error(absl::StrCat("Prefix matched multiple jobs\n\n", FormatJobList(rows)));
      return std::nullopt;
    }
    case PrefixMatch::Kind::kUnique:
      break;
  }
  return JsonString(found->items[found->match.indexes.front()], "ID");
}

std::optional<std::string> LookupAllocId(HttpClient& client, Ui& ui, const std::string& prefix,
                                         bool verbose, size_t id_length) {
  if (prefix.size() == 1) {
    ui.Error("Identifier must contain at least two characters.");
    return std::nullopt;
  }
  std::optional<ListLookup> found =
      FetchAndResolve(client, ui, "/v1/allocations", prefix, "Error querying allocation");
  if (!found) {
    return std::nullopt;
  }
  switch (found->match.kind) {
    case PrefixMatch::Kind::kNone:
      ui.Error(absl::StrCat("No allocation(s) with prefix or id ", Quote(prefix), " found"));
      return std::nullopt;
    case PrefixMatch::Kind::kAmbiguous: {
      std::vector<AllocRow> rows;
      for (size_t i : found->match.indexes) {
        rows.push_back(AllocRowFromJson(found->items[i]));
      }
      ui.Error(absl::StrCat("Prefix matched multiple allocations\n\n",
                            FormatAllocList(rows, verbose, id_length, ui.Now())));
      return std::nullopt;
    }
    case PrefixMatch::Kind::kUnique:
      break;
  }
  return JsonString(found->items[found->match.indexes.front()], "ID");
}

std::optional<std::string> LookupDeploymentId(HttpClient& client, Ui& ui, const std::string& prefix,
                                              size_t id_length) {
  if (prefix.size() < 2) {
    ui.Error("Identifier must contain at least two characters.");
    return std::nullopt;
  }
  std::optional<ListLookup> found =
      FetchAndResolve(client, ui, "/v1/deployments", prefix, "Error retrieving deployment");
  if (!found) {
    return std::nullopt;
  }
  switch (found->match.kind) {
    case PrefixMatch::Kind::kNone:
      ui.Error(absl::StrCat("Deployment ID ", Quote(prefix), " matched no deployments"));
      return std::nullopt;
    case PrefixMatch::Kind::kAmbiguous: {
      codec::Json matched = codec::Json::array();
      for (size_t i : found->match.indexes) {
        matched.push_back(found->items[i]);
      }
      ui.Error(absl::StrCat("Prefix matched multiple deployments\n\n",
                            FormatDeploymentList(matched, id_length)));
      return std::nullopt;
    }
    case PrefixMatch::Kind::kUnique:
      break;
  }
  return JsonString(found->items[found->match.indexes.front()], "ID");
}

std::optional<std::string> LookupNodeId(HttpClient& client, Ui& ui, const std::string& prefix,
                                        bool verbose, size_t id_length) {
  if (prefix.size() == 1) {
    ui.Error("Identifier must contain at least two characters.");
    return std::nullopt;
  }
  std::optional<ListLookup> found =
      FetchAndResolve(client, ui, "/v1/nodes", prefix, "Error querying node info");
  if (!found) {
    return std::nullopt;
  }
  switch (found->match.kind) {
    case PrefixMatch::Kind::kNone:
      ui.Error(absl::StrCat("No node(s) with prefix ", Quote(prefix), " found"));
      return std::nullopt;
    case PrefixMatch::Kind::kAmbiguous: {
      std::vector<NodeRow> rows;
      for (size_t i : found->match.indexes) {
        rows.push_back(NodeRowFromJson(found->items[i]));
      }
      ui.Error(absl::StrCat("Prefix matched multiple nodes\n\n",
                            FormatNodeList(rows, verbose, id_length)));
      return std::nullopt;
    }
    case PrefixMatch::Kind::kUnique:
      break;
  }
  return JsonString(found->items[found->match.indexes.front()], "ID");
}

std::optional<std::string> LocalNodeId(HttpClient& client, Ui& ui) {
  absl::StatusOr<codec::Json> self = GetJson(client, "/v1/agent/self");
  if (!self.ok()) {
    ui.Error(absl::StrCat("Error querying agent info: ", self.status().message()));
    return std::nullopt;
  }
  const codec::Json* config = self->contains("config") ? &(*self)["config"] : nullptr;
  std::string node;
  if (config != nullptr && config->contains("Client"))
    node = JsonString((*config)["Client"], "NodeID");
  if (node.empty()) {
    ui.Error("Local node ID unknown: this agent runs no client");
    return std::nullopt;
  }
  return node;
}

}  // namespace drover::cli
