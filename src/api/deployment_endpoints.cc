// Deployments (docs/jobs.md#deployments): /v1/deployments, /v1/deployment/:id,
// /v1/deployment/allocations/:id, the writes under /v1/deployment/{promote,fail,pause,
// allocation-health,unblock}/:id, and /v1/job/:id/deployments and /deployment.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/limits.h"

namespace drover::api {
namespace {

using model::Table;

// The largest number of allocation IDs one health write may name (Nomad's
// MaxUUIDsPerWriteRequest); bodies are bounded to fit them.
constexpr size_t kMaxAllocIds = 7281;
constexpr size_t kMaxHealthBodyBytes = 512 << 10;

codec::Json UpdateResponseJson(const model::DeploymentUpdateResponse& r) {
  return {{"EvalID", r.eval_id},
          {"EvalCreateIndex", r.eval_create_index},
          {"DeploymentModifyIndex", r.deployment_modify_index},
          {"RevertedJobVersion",
           r.reverted_job_version ? codec::Json(*r.reverted_job_version) : codec::Json(nullptr)},
          {"Index", r.index}};
}

Response UpdateResponse(const Request& req,
                        const absl::StatusOr<model::DeploymentUpdateResponse>& r) {
  if (!r.ok())
    return ErrorResponse(r.status());
  return JsonResponse(req, UpdateResponseJson(*r), r->index);
}

// A write's body, bounded; its DeploymentID, when set, must name the URL's deployment.
absl::StatusOr<codec::Json> WriteBody(const Request& req, size_t max_bytes = kMaxSmallBodyBytes) {
  auto body = SmallBodyObject(req, max_bytes);
  if (!body.ok())
    return body.status();
  auto it = body->find("DeploymentID");
  if (it != body->end() && !it->is_null() && *it != "" &&
      (!it->is_string() || *it != req.Param("id")))
    return absl::InvalidArgumentError("Deployment ID does not match");
  return body;
}

// A boolean member (absent or null: false).
absl::StatusOr<bool> BoolMember(const codec::Json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null())
    return false;
  if (!it->is_boolean())
    return absl::InvalidArgumentError(std::string(key) + ": expected a boolean");
  return it->get<bool>();
}

// A list of strings under `key` (absent or null: empty), at most `max` long.
absl::StatusOr<std::vector<std::string>> StringList(const codec::Json& body, const char* key,
                                                    size_t max = kMaxAllocIds) {
  std::vector<std::string> out;
  auto it = body.find(key);
  if (it == body.end() || it->is_null())
    return out;
  if (!it->is_array())
    return absl::InvalidArgumentError(std::string(key) + ": expected a list of strings");
  if (it->size() > max)
    return absl::InvalidArgumentError(std::string(key) + ": at most " + std::to_string(max));
  for (const codec::Json& v : *it) {
    if (!v.is_string())
      return absl::InvalidArgumentError(std::string(key) + ": expected a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

asio::awaitable<Response> Promote(ApiContext& ctx, Request& req) {
  auto body = WriteBody(req);
  if (!body.ok())
    co_return ErrorResponse(body.status());
  auto all = BoolMember(*body, "All");
  if (!all.ok())
    co_return ErrorResponse(all.status());
  auto groups = StringList(*body, "Groups", codec::JobLimits::kMaxGroups);
  if (!groups.ok())
    co_return ErrorResponse(groups.status());
  // As Nomad's CLI: naming nothing promotes every group.
  const bool every = *all || groups->empty();
  std::string id = req.Param("id");
  auto r = co_await ctx.server->PromoteDeploymentDurably(std::move(id), every, *std::move(groups));
  co_return UpdateResponse(req, r);
}

asio::awaitable<Response> Pause(ApiContext& ctx, Request& req) {
  auto body = WriteBody(req);
  if (!body.ok())
    co_return ErrorResponse(body.status());
  auto pause = BoolMember(*body, "Pause");
  if (!pause.ok())
    co_return ErrorResponse(pause.status());
  std::string id = req.Param("id");
  auto r = co_await ctx.server->PauseDeploymentDurably(std::move(id), *pause);
  co_return UpdateResponse(req, r);
}

asio::awaitable<Response> SetHealth(ApiContext& ctx, Request& req) {
  auto body = WriteBody(req, kMaxHealthBodyBytes);
  if (!body.ok())
    co_return ErrorResponse(body.status());
  std::string id = req.Param("id");
  auto healthy = StringList(*body, "HealthyAllocationIDs");
  if (!healthy.ok())
    co_return ErrorResponse(healthy.status());
  auto unhealthy = StringList(*body, "UnhealthyAllocationIDs");
  if (!unhealthy.ok())
    co_return ErrorResponse(unhealthy.status());
  if (healthy->size() + unhealthy->size() > kMaxAllocIds) {
    co_return Response::Error(400, "HealthyAllocationIDs and UnhealthyAllocationIDs: at most " +
                                       std::to_string(kMaxAllocIds) + " together");
  }
  auto r = co_await ctx.server->SetAllocHealthDurably(std::move(id), *std::move(healthy),
                                                      *std::move(unhealthy));
  co_return UpdateResponse(req, r);
}

asio::awaitable<Response> Fail(ApiContext& ctx, Request& req) {
  std::string id = req.Param("id");
  auto r = co_await ctx.server->FailDeploymentDurably(std::move(id));
  co_return UpdateResponse(req, r);
}

// Unblocking is for multiregion deployments, which Drover does not have: every
// deployment that exists is refused as Nomad refuses one that is not blocked.
asio::awaitable<Response> Unblock(ApiContext& ctx, Request& req) {
  const model::DeploymentPtr d = ctx.server->GetDeployment(req.Param("id"));
  if (!d)
    co_return Response::Error(404, "deployment not found");
  if (!d->Active())
    co_return Response::Error(500, "can't unblock terminal deployment");
  co_return Response::Error(500, "can't unblock running deployment");
}

codec::Json DeploymentList(const std::vector<model::DeploymentPtr>& list) {
  codec::Json out = codec::Json::array();
  for (const model::DeploymentPtr& d : list)
    out.push_back(codec::ToJson(*d));
  return out;
}

}  // namespace

void RegisterDeploymentRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/deployments", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kDeployments);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    std::function<codec::Json()> build =
        [list = ctx.server->ListDeployments(NamespaceOf(req), req.Query("prefix"))] {
          return DeploymentList(list);
        };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/deployment/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto d = ctx.server->GetDeployment(req.Param("id"));
      return d ? d->modify_index : 0;
    };
    auto index = co_await BlockObject(ctx, req, std::move(object_index), Table::kDeployments);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto d = ctx.server->GetDeployment(req.Param("id"));
    if (!d)
      co_return Response::Error(404, "deployment not found");
    co_return JsonResponse(req, codec::ToJson(*d), d->modify_index);
  });
  router.Add({"GET"}, "/v1/deployment/allocations/:id",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto index = co_await Block(ctx, req, Table::kAllocs, Table::kDeployments);
               if (!index.ok())
                 co_return ErrorResponse(index.status());
               auto d = ctx.server->GetDeployment(req.Param("id"));
               if (!d)
                 co_return Response::Error(404, "deployment not found");
               std::function<codec::Json()> build =
                   [id = d->id, allocs = ctx.server->AllocsByJob(d->namespace_, d->job_id)] {
                     codec::Json out = codec::Json::array();
                     for (const model::AllocPtr& a : allocs) {
                       if (a->deployment_id == id)
                         out.push_back(codec::AllocStubJson(*a));
                     }
                     return out;
                   };
               co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
             });
  router.Add({"PUT", "POST"}, "/v1/deployment/promote/:id",
             [&ctx](Request& req) { return Promote(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/deployment/fail/:id",
             [&ctx](Request& req) { return Fail(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/deployment/pause/:id",
             [&ctx](Request& req) { return Pause(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/deployment/allocation-health/:id",
             [&ctx](Request& req) { return SetHealth(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/deployment/unblock/:id",
             [&ctx](Request& req) { return Unblock(ctx, req); });
  router.Add({"GET"}, "/v1/job/:id/deployments", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kDeployments, Table::kJobs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    const std::string ns = NamespaceOf(req);
    if (!ctx.server->GetJob(ns, req.Param("id")))
      co_return Response::Error(404, "job not found");
    std::function<codec::Json()> build =
        [list = ctx.server->DeploymentsByJob(ns, req.Param("id"))] { return DeploymentList(list); };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/job/:id/deployment", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kDeployments, Table::kJobs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto list = ctx.server->DeploymentsByJob(NamespaceOf(req), req.Param("id"));
    co_return JsonResponse(req, list.empty() ? codec::Json(nullptr) : codec::ToJson(*list.front()),
                           *index);
  });
}

}  // namespace drover::api
