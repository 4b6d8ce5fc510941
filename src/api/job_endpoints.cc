// /v1/jobs and /v1/job/:id[/...]: list, register, read, deregister, and the job's
// allocations, evaluations and summary.
#include <optional>

#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/job_request.h"
#include "api/query.h"
#include "common/offload.h"

namespace drover::api {
namespace {

using model::Table;

asio::awaitable<Response> Register(ApiContext& ctx, Request& req, std::string path_id) {
  auto decoded = co_await DecodeRegisterOffloaded(ctx, req, std::move(path_id));
  if (!decoded.ok())
    co_return DecodeErrorResponse(decoded.status());
  // Answered once durable; a job that could not be made durable is not registered.
  std::optional<uint64_t> enforce;
  if (decoded->enforce_index)
    enforce = decoded->job_modify_index;
  // Named, not temporaries inside co_await: see GCC 12 in docs/threading.md.
  codec::PreparedJob job = *std::move(decoded->job);
  auto resp = co_await ctx.server->RegisterJobDurably(std::move(job), enforce);
  if (!resp.ok()) {
    co_return ErrorResponse(resp.status(), /*invalid_is_500=*/true);
  }
  resp->warnings.insert(resp->warnings.end(), decoded->warnings.begin(), decoded->warnings.end());
  co_return WriteResponse(req, RegisterResponseJson(*resp), resp->index);
}

}  // namespace

void RegisterJobRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/jobs", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kJobs, Table::kAllocs, Table::kEvals);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    std::vector<std::pair<model::JobPtr, model::JobSummary>> jobs;
    for (const auto& j : ctx.server->ListJobs(NamespaceOf(req), req.Query("prefix"))) {
      jobs.emplace_back(j, ctx.server->JobSummary(*j));
    }
    // ?meta=true adds each job's meta (Nomad's omitempty Meta).
    const bool meta = QueryBool(req, "meta", false);
    std::function<codec::Json()> build = [jobs = std::move(jobs), meta] {
      codec::Json out = codec::Json::array();
      for (const auto& [j, s] : jobs) {
        codec::Json stub = codec::JobStubJson(*j, &s);
        if (meta && !j->meta.empty())
          stub["Meta"] = j->meta;
        out.push_back(std::move(stub));
      }
      return out;
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"PUT", "POST"}, "/v1/jobs", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::string no_id;  // named: see GCC 12 in docs/threading.md
    co_return co_await Register(ctx, req, std::move(no_id));
  });
  router.Add({"PUT", "POST"}, "/v1/job/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::string id = req.Param("id");  // named: see GCC 12 in docs/threading.md
    co_return co_await Register(ctx, req, std::move(id));
  });
  router.Add({"GET"}, "/v1/job/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto j = ctx.server->GetJob(NamespaceOf(req), req.Param("id"));
      return j ? j->modify_index : 0;
    };
    auto index = co_await BlockObject(ctx, req, std::move(object_index), Table::kJobs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto job = ctx.server->GetJob(NamespaceOf(req), req.Param("id"));
    if (!job)
      co_return Response::Error(404, "job not found");
    co_return JsonResponse(req, codec::ToJson(*job), job->modify_index);
  });
  router.Add({"DELETE"}, "/v1/job/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::string ns = NamespaceOf(req);  // named: see GCC 12 in docs/threading.md
    std::string id = req.Param("id");
    auto resp = co_await ctx.server->DeregisterJobDurably(
        std::move(ns), std::move(id), QueryBool(req, "purge", false),
        QueryBool(req, "no_shutdown_delay", false));
    if (!resp.ok())
      co_return ErrorResponse(resp.status());
    codec::Json body = {{"EvalID", resp->eval_id},
                        {"EvalCreateIndex", resp->eval_create_index},
                        {"JobModifyIndex", resp->job_modify_index},
                        {"VolumeEvalID", ""},
                        {"VolumeEvalIndex", 0},
                        {"Index", resp->index},
                        {"LastContact", 0},
                        {"KnownLeader", false}};
    co_return WriteResponse(req, body, resp->index);
  });
  router.Add({"GET"}, "/v1/job/:id/allocations", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto allocs = ctx.server->AllocsByJob(NamespaceOf(req), req.Param("id"));
    // Without ?all, only those of the job registered now, not of an earlier job with the
    // same ID (purged and registered again), as Nomad.
    if (!QueryBool(req, "all", false)) {
      auto job = ctx.server->GetJob(NamespaceOf(req), req.Param("id"));
      std::erase_if(allocs, [&job](const model::AllocPtr& a) {
        return job && a->job && a->job->create_index != job->create_index;
      });
    }
    std::function<codec::Json()> build = [allocs = std::move(allocs)] {
      codec::Json out = codec::Json::array();
      for (const auto& a : allocs)
        out.push_back(codec::AllocStubJson(*a));
      return out;
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/job/:id/evaluations", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kEvals);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    codec::Json out = codec::Json::array();
    for (const auto& e : ctx.server->EvalsByJob(NamespaceOf(req), req.Param("id"))) {
      out.push_back(codec::ToJson(*e));
    }
    co_return JsonResponse(req, out, *index);
  });
  router.Add({"GET"}, "/v1/job/:id/summary", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto j = ctx.server->GetJob(NamespaceOf(req), req.Param("id"));
      return j ? ctx.server->JobSummary(*j).modify_index : 0;
    };
    auto index =
        co_await BlockObject(ctx, req, std::move(object_index), Table::kJobs, Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto job = ctx.server->GetJob(NamespaceOf(req), req.Param("id"));
    if (!job)
      co_return Response::Error(404, "job not found");
    const model::JobSummary s = ctx.server->JobSummary(*job);
    co_return JsonResponse(req, codec::ToJson(s), s.modify_index);
  });
}

}  // namespace drover::api
