// /v1/nodes, /v1/node/:id, /v1/node/:id/allocations.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "common/logging.h"

namespace drover::api {

using model::Table;

namespace {
// {"NodeID": "...", "Eligibility": "ineligible"}: parsed on the loop, so kept small.
constexpr size_t kMaxEligibilityBody = 4096;
// A drain request, with its Meta: also parsed on the loop.
constexpr size_t kMaxDrainBody = 16 * 1024;

// Nomad's NodeUpdateDrainRequest: {"DrainSpec": {"Deadline": ns, "IgnoreSystemJobs":
// bool} or null (stop draining), "MarkEligible": bool, "Meta": {string: string}}.
struct DrainBody {
  std::optional<model::DrainSpec> spec;
  bool mark_eligible = false;
  std::map<std::string, std::string> meta;
};

absl::StatusOr<DrainBody> DecodeDrainBody(const std::string& text) {
  auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError("Failed to decode request body: " + what);
  };
  if (text.size() > kMaxDrainBody)
    return bad("larger than " + std::to_string(kMaxDrainBody) + " bytes");
  absl::StatusOr<codec::Json> body = codec::ParseJson(text);
  if (!body.ok() || !body->is_object())
    return bad("expected a JSON object with DrainSpec");
  DrainBody out;
  auto spec = body->find("DrainSpec");
  if (spec != body->end() && !spec->is_null()) {
    if (!spec->is_object())
      return bad("DrainSpec: expected an object or null");
    model::DrainSpec s;
    if (auto d = spec->find("Deadline"); d != spec->end() && !d->is_null()) {
      const bool fits = d->is_number_unsigned() ? d->get<uint64_t>() <= uint64_t{INT64_MAX}
                                                : d->is_number_integer();
      if (!fits)
        return bad("DrainSpec.Deadline: expected an integer of nanoseconds");
      s.deadline = common::Duration(d->get<int64_t>());
    }
    if (auto i = spec->find("IgnoreSystemJobs"); i != spec->end() && !i->is_null()) {
      if (!i->is_boolean())
        return bad("DrainSpec.IgnoreSystemJobs: expected a boolean");
      s.ignore_system_jobs = i->get<bool>();
    }
    out.spec = s;
  }
  if (auto m = body->find("MarkEligible"); m != body->end() && !m->is_null()) {
    if (!m->is_boolean())
      return bad("MarkEligible: expected a boolean");
    out.mark_eligible = m->get<bool>();
  }
  if (auto m = body->find("Meta"); m != body->end() && !m->is_null()) {
    if (!m->is_object())
      return bad("Meta: expected an object of strings");
    for (const auto& [k, v] : m->items()) {
      if (!v.is_string())
        return bad("Meta[\"" + k + "\"]: expected a string");
      out.meta[k] = v.get<std::string>();
    }
  }
  return out;
}
// Nomad's NodeUpdateResponse / NodeDrainUpdateResponse: no evaluations is a null list.
Response NodeUpdateResponse(const Request& req, const model::EvalResponse& resp) {
  codec::Json out = {
      {"EvalIDs", resp.eval_ids.empty() ? codec::Json(nullptr) : codec::Json(resp.eval_ids)},
      {"EvalCreateIndex", resp.eval_create_index},
      {"NodeModifyIndex", resp.index},
      {"Index", resp.index}};
  return JsonResponse(req, out, resp.index);
}

void RegisterNodeWriteRoutes(Router& router, ApiContext& ctx);
}  // namespace

void RegisterNodeRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/nodes", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kNodes);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    codec::Json out = codec::Json::array();
    const bool os = QueryBool(req, "os", false);
    for (const auto& n : ctx.server->ListNodes(req.Query("prefix"))) {
      codec::Json stub = codec::NodeStubJson(*n);
      if (os) {
        auto it = n->attributes.find("os.name");
        stub["Attributes"] = {{"os.name", it == n->attributes.end() ? "" : it->second}};
      }
      out.push_back(std::move(stub));
    }
    co_return JsonResponse(req, out, *index);
  });
  router.Add({"GET"}, "/v1/node/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto n = ctx.server->GetNode(req.Param("id"));
      return n ? n->modify_index : 0;
    };
    auto index = co_await BlockObject(ctx, req, std::move(object_index), Table::kNodes);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto node = ctx.server->GetNode(req.Param("id"));
    if (!node)
      co_return Response::Error(404, "node not found");
    co_return JsonResponse(req, codec::ToJson(*node), node->modify_index);
  });
  router.Add({"GET"}, "/v1/node/:id/allocations",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto index = co_await Block(ctx, req, Table::kAllocs);
               if (!index.ok())
                 co_return ErrorResponse(index.status());
               if (!ctx.server->GetNode(req.Param("id"))) {
                 co_return Response::Error(404, "node not found");
               }
               auto allocs = ctx.server->AllocsByNode(req.Param("id"));
               std::function<codec::Json()> build = [allocs = std::move(allocs)] {
                 codec::Json out = codec::Json::array();
                 for (const auto& a : allocs)
                   out.push_back(codec::ToJson(*a));
                 return out;
               };
               co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
             });
  RegisterNodeWriteRoutes(router, ctx);
}

namespace {

// A refused node write: logged once, with what the caller sent cut short (it is theirs).
Response Refused(const Request& req, const absl::Status& status) {
  constexpr size_t kMaxLogged = 200;
  DROVER_LOG_INFO("refused {} {} from {}: {}", req.method, req.path.substr(0, kMaxLogged),
                  req.peer_ip, std::string(status.message()).substr(0, kMaxLogged));
  return ErrorResponse(status);
}

// PUT /v1/node/:id/eligibility and /drain.
void RegisterNodeWriteRoutes(Router& router, ApiContext& ctx) {
  router.Add(
      {"PUT", "POST"}, "/v1/node/:id/eligibility",
      [&ctx](Request& req) -> asio::awaitable<Response> {
        absl::StatusOr<codec::Json> body =
            req.body.size() > kMaxEligibilityBody
                ? absl::StatusOr<codec::Json>(absl::InvalidArgumentError("too large"))
                : codec::ParseJson(req.body);
        if (!body.ok() || !body->is_object())
          co_return Refused(
              req, absl::InvalidArgumentError("Failed to decode request body: expected a JSON "
                                              "object with Eligibility"));
        auto it = body->find("Eligibility");
        if (it == body->end() || !it->is_string())
          co_return Refused(req, absl::InvalidArgumentError("missing Eligibility: \"eligible\" or "
                                                            "\"ineligible\""));
        std::string node_id = req.Param("id");
        std::string eligibility = it->get<std::string>();
        auto resp = co_await ctx.server->SetNodeEligibilityDurably(std::move(node_id),
                                                                   std::move(eligibility));
        if (!resp.ok())
          co_return Refused(req, resp.status());
        co_return NodeUpdateResponse(req, *resp);
      });
  router.Add({"PUT", "POST"}, "/v1/node/:id/drain",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               absl::StatusOr<DrainBody> body = DecodeDrainBody(req.body);
               if (!body.ok())
                 co_return Refused(req, body.status());
               std::string node_id = req.Param("id");
               auto resp = co_await ctx.server->UpdateNodeDrainDurably(
                   std::move(node_id), body->spec, body->mark_eligible, std::move(body->meta));
               if (!resp.ok())
                 co_return Refused(req, resp.status());
               co_return NodeUpdateResponse(req, *resp);
             });
}

}  // namespace

}  // namespace drover::api
