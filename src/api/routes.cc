#include "api/api_context.h"
#include "api/forward.h"
#include "codec/validate.h"

namespace drover::api {

void RegisterRoutes(Router& router, ApiContext& ctx) {
  // ?namespace= is a namespace name or "*" (reads of every namespace); anything else,
  // a NUL byte included, is refused before it reaches a handler.
  router.AddCheck([](const Request& req) -> std::optional<Response> {
    auto it = req.query.find("namespace");
    if (it == req.query.end() || it->second.empty() || it->second == "*" ||
        codec::ValidNamespaceName(it->second)) {
      return std::nullopt;
    }
    return Response::Error(400, "invalid namespace: names are 1-128 letters, digits and dashes");
  });
  RegisterAgentRoutes(router, ctx);
  RegisterJobspecRoutes(router, ctx);
  // What only a server can answer; a client-only agent forwards it (forward.h).
  if (ctx.server != nullptr) {
    RegisterJobRoutes(router, ctx);
    RegisterJobVersionRoutes(router, ctx);
    RegisterScalingRoutes(router, ctx);
    RegisterPeriodicRoutes(router, ctx);
    RegisterEventRoutes(router, ctx);
    RegisterSearchRoutes(router, ctx);
    RegisterDeploymentRoutes(router, ctx);
    RegisterAllocRoutes(router, ctx);
    RegisterEvalRoutes(router, ctx);
    RegisterNodeRoutes(router, ctx);
    RegisterOperatorRoutes(router, ctx);
  }
  RegisterClientRoutes(router, ctx);
  RegisterFsRoutes(router, ctx);
  RegisterStatsRoutes(router, ctx);
  RegisterMetricsRoutes(router, ctx);
  // A server sends client calls for allocations it does not run to their node.
  if (ctx.server != nullptr) {
    router.WrapRoutes("/v1/client/",
                      [&ctx](Handler local) { return ForwardToAllocNode(ctx, std::move(local)); });
  }
}

}  // namespace drover::api
