// /v1/allocations, /v1/allocation/:id, /v1/allocation/:id/stop.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"

namespace drover::api {

using model::Table;

void RegisterAllocRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/allocations", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto allocs = ctx.server->ListAllocs(NamespaceOf(req), req.Query("prefix"));
    const bool task_states = QueryBool(req, "task_states", true);
    const bool resources = QueryBool(req, "resources", false);
    std::function<codec::Json()> build = [allocs = std::move(allocs), task_states, resources] {
      codec::Json out = codec::Json::array();
      for (const auto& a : allocs) {
        codec::Json stub = codec::AllocStubJson(*a, task_states);
        if (resources)
          stub["AllocatedResources"] = codec::ToJson(a->allocated_resources);
        out.push_back(std::move(stub));
      }
      return out;
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/allocation/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto a = ctx.server->GetAlloc(req.Param("id"));
      return a ? a->modify_index : 0;
    };
    auto index = co_await BlockObject(ctx, req, std::move(object_index), Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto alloc = ctx.server->GetAlloc(req.Param("id"));
    if (!alloc)
      co_return Response::Error(404, "alloc not found");
    co_return JsonResponse(req, codec::ToJson(*alloc), alloc->modify_index);
  });
  router.Add({"PUT", "POST"}, "/v1/allocation/:id/stop",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               std::string id = req.Param("id");  // named: see GCC 12 in docs/threading.md
               auto resp = co_await ctx.server->StopAllocDurably(
                   std::move(id), QueryBool(req, "no_shutdown_delay", false));
               if (!resp.ok())
                 co_return ErrorResponse(resp.status());
               codec::Json body = {{"EvalID", resp->eval_id}, {"Index", resp->index}};
               co_return JsonResponse(req, body, resp->index);
             });
}

}  // namespace drover::api
