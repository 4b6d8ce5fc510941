// PUT/POST /v1/search and /v1/search/fuzzy (docs/api.md#search): IDs that start with a
// prefix, and names that contain a text, per context, with Nomad's truncation.
#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/validate.h"

namespace drover::api {
namespace {

// Nomad's: a prefix search returns at most 20 IDs per context (truncateLimit), a fuzzy
// one at most 100 (search.limit_results), and a fuzzy text has at least 2 characters
// (search.min_term_length).
constexpr size_t kPrefixLimit = 20;
constexpr size_t kFuzzyLimit = 100;
constexpr size_t kMinTermLength = 2;
constexpr size_t kMaxTermBytes = 256;

const std::vector<std::string>& PrefixContexts() {
  static const std::vector<std::string> contexts = {"allocs", "deployment", "evals",
                                                    "jobs",   "namespaces", "nodes"};
  return contexts;
}
const std::vector<std::string>& FuzzyContexts() {
  static const std::vector<std::string> contexts = {"allocs", "jobs", "namespaces", "nodes"};
  return contexts;
}

struct SearchRequest {
  std::string term;
  std::vector<std::string> contexts;
};

absl::StatusOr<SearchRequest> DecodeSearch(const Request& req, const char* term_field,
                                           const std::vector<std::string>& known) {
  auto body = SmallBodyObject(req);
  if (!body.ok())
    return body.status();
  SearchRequest out;
  std::string context = "all";
  for (const auto& [key, value] :
       {std::pair{term_field, &out.term}, std::pair{"Context", &context}}) {
    auto it = body->find(key);
    if (it == body->end() || it->is_null())
      continue;
    if (!it->is_string())
      return absl::InvalidArgumentError(std::string(key) + ": expected a string");
    *value = it->get<std::string>();
  }
  if (out.term.size() > kMaxTermBytes) {
    return absl::InvalidArgumentError(std::string(term_field) + ": at most " +
                                      std::to_string(kMaxTermBytes) + " bytes");
  }
  if (context.empty() || context == "all") {
    out.contexts = known;
  } else if (std::find(known.begin(), known.end(), context) != known.end()) {
    out.contexts = {context};
  } else {
    // Nomad's text, and its status (a plain error: 500).
    return absl::FailedPreconditionError("context must be one of [" + absl::StrJoin(known, " ") +
                                         "] or 'all' for all contexts; got \"" + context + "\"");
  }
  return out;
}

// The first `limit` IDs (sorted) of `context` that start with `prefix`, and whether
// there were more. Only those are copied or fully ordered: an empty prefix matches all.
std::pair<std::vector<std::string>, bool> PrefixIds(ServerApi& server, const std::string& ns,
                                                    const std::string& context,
                                                    const std::string& prefix, size_t limit) {
  // The listed objects stay alive (held here) while their IDs are viewed.
  std::vector<model::JobPtr> jobs;
  std::vector<model::AllocPtr> allocs;
  std::vector<model::EvalPtr> evals;
  std::vector<model::DeploymentPtr> deployments;
  std::vector<model::NodePtr> nodes;
  std::vector<std::string_view> ids;
  const auto collect = [&ids](const auto& list) {
    for (const auto& item : list)
      ids.push_back(item->id);
  };
  if (context == "jobs") {
    jobs = server.ListJobs(ns, prefix);
    collect(jobs);
  } else if (context == "allocs") {
    allocs = server.ListAllocs(ns, prefix);
    collect(allocs);
  } else if (context == "evals") {
    evals = server.ListEvals(ns, prefix);
    collect(evals);
  } else if (context == "deployment") {
    deployments = server.ListDeployments(ns, prefix);
    collect(deployments);
  } else if (context == "nodes") {
    nodes = server.ListNodes(prefix);
    collect(nodes);
  } else if (context == "namespaces") {
    if (std::string_view(codec::kDefaultNamespace).starts_with(prefix))
      ids.push_back(codec::kDefaultNamespace);
  }
  const size_t keep = std::min(ids.size(), limit);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end());
  return {std::vector<std::string>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep)),
          ids.size() > limit};
}

asio::awaitable<Response> PrefixSearch(ApiContext& ctx, Request& req) {
  auto decoded = DecodeSearch(req, "Prefix", PrefixContexts());
  if (!decoded.ok())
    co_return ErrorResponse(decoded.status());
  codec::Json matches = codec::Json::object();
  codec::Json truncations = codec::Json::object();
  for (const std::string& context : decoded->contexts) {
    auto [ids, truncated] =
        PrefixIds(*ctx.server, NamespaceOf(req), context, decoded->term, kPrefixLimit);
    truncations[context] = truncated;
    matches[context] = std::move(ids);
  }
  const uint64_t index = ctx.server->LatestIndex();
  co_return JsonResponse(
      req, {{"Matches", matches}, {"Truncations", truncations}, {"Index", index}}, index);
}

// A fuzzy match: where the text is in the name (case-insensitive), for ordering.
struct FuzzyMatch {
  size_t at = 0;
  std::string id;
  std::vector<std::string> scope;
};

void AddIfContains(std::vector<FuzzyMatch>& out, const std::string& text, const std::string& id,
                   std::vector<std::string> scope) {
  const size_t at = absl::AsciiStrToLower(id).find(text);
  if (at != std::string::npos)
    out.push_back({at, id, std::move(scope)});
}

// What a fuzzy search looks at, taken on the control loop (immutable objects).
struct FuzzyInput {
  std::vector<std::string> contexts;
  std::vector<model::JobPtr> jobs;
  std::vector<model::NodePtr> nodes;
  std::vector<model::AllocPtr> allocs;
};

bool Wants(const FuzzyInput& in, const char* context) {
  return std::find(in.contexts.begin(), in.contexts.end(), context) != in.contexts.end();
}

// Nomad's fuzzy contexts: jobs (with their groups and tasks under "groups" and
// "tasks"), nodes and allocations by name, namespaces.
std::map<std::string, std::vector<FuzzyMatch>> FuzzyMatches(const FuzzyInput& in,
                                                            const std::string& text) {
  std::map<std::string, std::vector<FuzzyMatch>> out;
  if (Wants(in, "jobs")) {
    out["jobs"];
    for (const model::JobPtr& j : in.jobs) {
      AddIfContains(out["jobs"], text, j->id, {j->namespace_});
      for (const model::TaskGroup& g : j->task_groups) {
        AddIfContains(out["groups"], text, g.name, {j->namespace_, j->id});
        for (const model::Task& t : g.tasks)
          AddIfContains(out["tasks"], text, t.name, {j->namespace_, j->id, g.name});
      }
    }
  }
  if (Wants(in, "nodes")) {
    out["nodes"];
    for (const model::NodePtr& n : in.nodes)
      AddIfContains(out["nodes"], text, n->name, {n->id});
  }
  if (Wants(in, "allocs")) {
    out["allocs"];
    for (const model::AllocPtr& a : in.allocs)
      AddIfContains(out["allocs"], text, a->name, {a->namespace_, a->id});
  }
  if (Wants(in, "namespaces")) {
    out["namespaces"];
    AddIfContains(out["namespaces"], text, codec::kDefaultNamespace, {});
  }
  return out;
}

asio::awaitable<Response> FuzzySearch(ApiContext& ctx, Request& req) {
  auto decoded = DecodeSearch(req, "Text", FuzzyContexts());
  if (!decoded.ok())
    co_return ErrorResponse(decoded.status());
  if (decoded->term.size() < kMinTermLength) {
    co_return Response::Error(500, "fuzzy search query must be at least " +
                                       std::to_string(kMinTermLength) + " characters, got " +
                                       std::to_string(decoded->term.size()));
  }
  const uint64_t index = ctx.server->LatestIndex();
  const std::string ns = NamespaceOf(req);
  FuzzyInput in{.contexts = decoded->contexts};
  if (Wants(in, "jobs"))
    in.jobs = ctx.server->ListJobs(ns, "");
  if (Wants(in, "nodes"))
    in.nodes = ctx.server->ListNodes("");
  if (Wants(in, "allocs"))
    in.allocs = ctx.server->ListAllocs(ns, "");
  // The matching looks at every name: on the pool, not the control loop.
  std::function<codec::Json()> build = [in = std::move(in),
                                        text = absl::AsciiStrToLower(decoded->term), index] {
    codec::Json matches = codec::Json::object();
    codec::Json truncations = codec::Json::object();
    for (auto& [context, found] : FuzzyMatches(in, text)) {
      std::sort(found.begin(), found.end(), [](const FuzzyMatch& a, const FuzzyMatch& b) {
        return std::tie(a.at, a.id, a.scope) < std::tie(b.at, b.id, b.scope);
      });
      truncations[context] = found.size() > kFuzzyLimit;
      if (found.size() > kFuzzyLimit)
        found.resize(kFuzzyLimit);
      codec::Json list = codec::Json::array();
      for (const FuzzyMatch& m : found)
        list.push_back({{"ID", m.id}, {"Scope", m.scope}});
      matches[context] = std::move(list);
    }
    return codec::Json{{"Matches", matches}, {"Truncations", truncations}, {"Index", index}};
  };
  co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), index);
}

}  // namespace

void RegisterSearchRoutes(Router& router, ApiContext& ctx) {
  router.Add({"PUT", "POST"}, "/v1/search",
             [&ctx](Request& req) { return PrefixSearch(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/search/fuzzy",
             [&ctx](Request& req) { return FuzzySearch(ctx, req); });
}

}  // namespace drover::api
