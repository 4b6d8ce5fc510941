#include "api/api_context.h"

namespace drover::api {

void RegisterRoutes(Router& router, ApiContext& ctx) {
  RegisterAgentRoutes(router, ctx);
  RegisterJobRoutes(router, ctx);
  RegisterJobspecRoutes(router, ctx);
  RegisterAllocRoutes(router, ctx);
  RegisterEvalRoutes(router, ctx);
  RegisterNodeRoutes(router, ctx);
  RegisterClientRoutes(router, ctx);
  RegisterFsRoutes(router, ctx);
  RegisterStatsRoutes(router, ctx);
}

}  // namespace drover::api
