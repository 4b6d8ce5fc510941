// /v1/evaluations, /v1/evaluation/:id, /v1/evaluation/:id/allocations.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"

namespace drover::api {

using model::Table;

void RegisterEvalRoutes(Router& router, ApiContext& ctx) {
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
