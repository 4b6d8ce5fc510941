// /v1/client/allocation/:id/restart, /signal and /gc, and /v1/client/gc: requests
// served by the client that runs the allocation.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "common/signals.h"

namespace drover::api {
namespace {

std::string StringField(const codec::Json& j, const char* key) {
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : "";
}

Response Ok(const Request& req, ApiContext& ctx) {
  // A client-only agent has no index of its own to report.
  const uint64_t index = ctx.server != nullptr ? ctx.server->LatestIndex() : 0;
  return JsonResponse(req, codec::Json{{"Index", index}}, index);
}

}  // namespace

void RegisterClientRoutes(Router& router, ApiContext& ctx) {
  router.Add({"PUT", "POST"}, "/v1/client/allocation/:id/restart",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto body = SmallBodyObject(req);
               if (!body.ok())
                 co_return ErrorResponse(body.status());
               const std::string task = StringField(*body, "TaskName");
               const bool all = body->value("AllTasks", false);
               if (!task.empty() && all) {
                 co_return Response::Error(400, "Task name and AllTasks cannot both be set");
               }
               if (ctx.client == nullptr)
                 co_return ErrorResponse(UnknownAllocation(req.Param("id")));
               const RestartScope scope = all            ? RestartScope::kAll
                                          : task.empty() ? RestartScope::kRunning
                                                         : RestartScope::kTask;
               absl::Status s = ctx.client->Restart(req.Param("id"), scope, task);
               if (!s.ok())
                 co_return ErrorResponse(s);
               co_return Ok(req, ctx);
             });
  router.Add({"PUT", "POST"}, "/v1/client/allocation/:id/signal",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto body = SmallBodyObject(req);
               if (!body.ok())
                 co_return ErrorResponse(body.status());
               std::string signal = StringField(*body, "Signal");
               if (signal.empty())
                 signal = "SIGKILL";  // Nomad's default
               if (!common::ParseSignal(signal).ok()) {
                 co_return Response::Error(400, "invalid signal: " + signal);
               }
               if (ctx.client == nullptr)
                 co_return ErrorResponse(UnknownAllocation(req.Param("id")));
               absl::Status s =
                   ctx.client->Signal(req.Param("id"), StringField(*body, "Task"), signal);
               if (!s.ok())
                 co_return ErrorResponse(s);
               co_return Ok(req, ctx);
             });
  // Garbage collection of terminal allocations on this node (their directories go).
  router.Add({"GET", "PUT", "POST"}, "/v1/client/allocation/:id/gc",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               if (ctx.client == nullptr)
                 co_return ErrorResponse(UnknownAllocation(req.Param("id")));
               absl::Status s = co_await ctx.client->CollectAllocation(req.Param("id"));
               if (!s.ok())
                 co_return ErrorResponse(s);
               co_return JsonResponse(req, codec::Json(nullptr), 0);
             });
  router.Add({"GET", "PUT", "POST"}, "/v1/client/gc",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               if (ctx.client != nullptr)
                 co_await ctx.client->CollectAll();
               co_return JsonResponse(req, codec::Json(nullptr), 0);
             });
}

}  // namespace drover::api
