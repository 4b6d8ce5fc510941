// /v1/evaluations, /v1/evaluation/:id, /v1/evaluation/:id/allocations.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"

namespace drover::api {

using model::Table;

namespace {

// Nomad's bound on the IDs one write may name (structs.MaxUUIDsPerWriteRequest).
constexpr size_t kMaxEvalIds = 7281;
// Room for that many IDs, quoted and separated.
constexpr size_t kMaxDeleteBodyBytes = 512 << 10;

// DELETE /v1/evaluations {"EvalIDs": [...]}: 200 with no body once they are gone.
asio::awaitable<Response> DeleteEvals(ApiContext& ctx, Request& req) {
  auto parsed = SmallBodyObject(req, kMaxDeleteBodyBytes);
  if (!parsed.ok())
    co_return ErrorResponse(parsed.status());
  std::vector<std::string> ids;
  if (auto it = parsed->find("EvalIDs"); it != parsed->end() && !it->is_null()) {
    if (!it->is_array())
      co_return Response::Error(400, "EvalIDs: expected a list of strings");
    for (const codec::Json& id : *it) {
      if (!id.is_string())
        co_return Response::Error(400, "EvalIDs: expected a list of strings");
      ids.push_back(id.get<std::string>());
    }
  }
  std::string filter;
  if (auto it = parsed->find("Filter"); it != parsed->end() && it->is_string())
    filter = it->get<std::string>();
  if (!filter.empty() && !ids.empty())
    co_return Response::Error(400, "evals cannot be deleted by both ID and filter");
  if (filter.empty() && ids.empty())
    co_return Response::Error(400, "evals must be deleted by either ID or filter");
  if (!filter.empty())
    co_return Response::Error(400, "Filter: filter expressions are not supported by Drover yet");
  if (ids.size() > kMaxEvalIds) {
    co_return Response::Error(400, "request includes " + std::to_string(ids.size()) +
                                       " evaluation IDs, must be " + std::to_string(kMaxEvalIds) +
                                       " or fewer");
  }
  auto index = co_await ctx.server->DeleteEvalsDurably(std::move(ids));
  if (!index.ok())
    co_return ErrorResponse(index.status());
  Response r;
  r.headers["X-Nomad-Index"] = std::to_string(*index);
  co_return r;
}

}  // namespace

void RegisterEvalRoutes(Router& router, ApiContext& ctx) {
  router.Add({"DELETE"}, "/v1/evaluations", [&ctx](Request& req) { return DeleteEvals(ctx, req); });
  router.Add({"GET"}, "/v1/evaluations", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kEvals);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto evals = ctx.server->ListEvals(NamespaceOf(req), req.Query("prefix"));
    const std::string job = req.Query("job");
    const std::string status = req.Query("status");
    std::function<codec::Json()> build = [evals = std::move(evals), job, status] {
      codec::Json out = codec::Json::array();
      for (const auto& e : evals) {
        if (!job.empty() && e->job_id != job)
          continue;
        if (!status.empty() && e->status != status)
          continue;
        out.push_back(codec::ToJson(*e));
      }
      return out;
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/evaluation/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto e = ctx.server->GetEval(req.Param("id"));
      return e ? e->modify_index : 0;
    };
    auto index = co_await BlockObject(ctx, req, std::move(object_index), Table::kEvals);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto eval = ctx.server->GetEval(req.Param("id"));
    if (!eval)
      co_return Response::Error(404, "eval not found");
    co_return JsonResponse(req, codec::ToJson(*eval), eval->modify_index);
  });
  router.Add({"GET"}, "/v1/evaluation/:id/allocations",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto index = co_await Block(ctx, req, Table::kAllocs);
               if (!index.ok())
                 co_return ErrorResponse(index.status());
               codec::Json out = codec::Json::array();
               for (const auto& a : ctx.server->AllocsByEval(req.Param("id"))) {
                 out.push_back(codec::AllocStubJson(*a));
               }
               co_return JsonResponse(req, out, *index);
             });
}

}  // namespace drover::api
