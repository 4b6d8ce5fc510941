// /v1/jobs and /v1/job/:id[/...]: list, register, read, deregister, and the job's
// allocations, evaluations and summary.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/unsupported_fields.h"
#include "server/server.h"

namespace drover::api {
namespace {

using server::Table;

codec::Json RegisterResponseJson(const server::EvalResponse& r) {
  std::string warnings;
  for (const auto& w : r.warnings)
    warnings += (warnings.empty() ? "" : "\n") + w;
  return {{"EvalID", r.eval_id},
          {"EvalCreateIndex", r.eval_create_index},
          {"JobModifyIndex", r.job_modify_index},
          {"Warnings", warnings},
          {"Index", r.index},
          {"LastContact", 0},
          {"KnownLeader", false}};
}

Response WriteResponse(const Request& req, const codec::Json& body, uint64_t index) {
  Response r = JsonResponse(req, body, index);
  r.headers.erase("X-Nomad-KnownLeader");
  r.headers.erase("X-Nomad-LastContact");
  return r;
}

// PUT/POST /v1/jobs and /v1/job/:id. `path_id` is empty for /v1/jobs.
Response Register(ApiContext& ctx, const Request& req, const std::string& path_id) {
  if (req.body.empty()) {
    return Response::Error(400, "Request body is empty");
  }
  auto parsed = codec::ParseJson(req.body);
  if (!parsed.ok()) {
    return Response::Error(
        400, "Failed to decode request body: " + std::string(parsed.status().message()));
  }
  if (!parsed->is_object() || !parsed->contains("Job") || (*parsed)["Job"].is_null()) {
    return Response::Error(400, "Job must be specified");
  }
  if (absl::Status s = codec::CheckSupportedJobFields((*parsed)["Job"]); !s.ok()) {
    return Response::Error(400, std::string(s.message()));
  }
  auto job = codec::JobFromJson((*parsed)["Job"]);
  if (!job.ok()) {
    return Response::Error(400, std::string(job.status().message()));
  }
  if (job->id.empty()) {
    return Response::Error(400, "Job ID hasn't been provided");
  }
  if (!path_id.empty() && job->id != path_id) {
    return Response::Error(400, "Job ID does not match name");
  }
  if (job->namespace_.empty())
    job->namespace_ = NamespaceOf(req);
  if (job->region.empty() && req.HasQuery("region"))
    job->region = req.Query("region");
  // EnforceIndex: register only if the job's JobModifyIndex matches (0 = must not exist).
  if (parsed->value("EnforceIndex", false)) {
    const uint64_t want = parsed->value("JobModifyIndex", uint64_t{0});
    auto existing = ctx.server->state().GetJob(job->namespace_, job->id);
    const uint64_t have = existing ? existing->job_modify_index : 0;
    if (want != have) {
      return Response::Error(
          500, want == 0
                   ? "Enforcing job modify index 0: job already exists"
                   : "Enforcing job modify index " + std::to_string(want) +
                         ": job exists with conflicting job modify index: " + std::to_string(have));
    }
  }
  auto resp = ctx.server->RegisterJob(std::move(*job));
  if (!resp.ok()) {
    return ErrorResponse(resp.status(), /*invalid_is_500=*/true);
  }
  return WriteResponse(req, RegisterResponseJson(*resp), resp->index);
}

}  // namespace

void RegisterJobRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/jobs", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kJobs, Table::kAllocs, Table::kEvals);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    std::vector<std::pair<server::JobPtr, model::JobSummary>> jobs;
    for (const auto& j : ctx.server->state().ListJobs(NamespaceOf(req), req.Query("prefix"))) {
      jobs.emplace_back(j, ctx.server->state().JobSummary(*j));
    }
    std::function<codec::Json()> build = [jobs = std::move(jobs)] {
      codec::Json out = codec::Json::array();
      for (const auto& [j, s] : jobs)
        out.push_back(codec::JobStubJson(*j, &s));
      return out;
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"PUT", "POST"}, "/v1/jobs", [&ctx](Request& req) -> asio::awaitable<Response> {
    Response resp = Register(ctx, req, "");
    co_return co_await AfterDurable(ctx, std::move(resp));
  });
  router.Add({"PUT", "POST"}, "/v1/job/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    Response resp = Register(ctx, req, req.Param("id"));
    co_return co_await AfterDurable(ctx, std::move(resp));
  });
  router.Add({"GET"}, "/v1/job/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto j = ctx.server->state().GetJob(NamespaceOf(req), req.Param("id"));
      return j ? j->modify_index : 0;
    };
    auto index = co_await BlockObject(ctx, req, std::move(object_index), Table::kJobs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto job = ctx.server->state().GetJob(NamespaceOf(req), req.Param("id"));
    if (!job)
      co_return Response::Error(404, "job not found");
    co_return JsonResponse(req, codec::ToJson(*job), job->modify_index);
  });
  router.Add({"DELETE"}, "/v1/job/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto resp =
        ctx.server->DeregisterJob(NamespaceOf(req), req.Param("id"), QueryBool(req, "purge", false),
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
    Response out = WriteResponse(req, body, resp->index);
    co_return co_await AfterDurable(ctx, std::move(out));
  });
  router.Add({"GET"}, "/v1/job/:id/allocations", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto allocs = ctx.server->state().AllocsByJob(NamespaceOf(req), req.Param("id"));
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
    for (const auto& e : ctx.server->state().EvalsByJob(NamespaceOf(req), req.Param("id"))) {
      out.push_back(codec::ToJson(*e));
    }
    co_return JsonResponse(req, out, *index);
  });
  router.Add({"GET"}, "/v1/job/:id/summary", [&ctx](Request& req) -> asio::awaitable<Response> {
    std::function<uint64_t()> object_index = [&ctx, &req] {
      auto j = ctx.server->state().GetJob(NamespaceOf(req), req.Param("id"));
      return j ? ctx.server->state().JobSummary(*j).modify_index : 0;
    };
    auto index =
        co_await BlockObject(ctx, req, std::move(object_index), Table::kJobs, Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    auto job = ctx.server->state().GetJob(NamespaceOf(req), req.Param("id"));
    if (!job)
      co_return Response::Error(404, "job not found");
    const model::JobSummary s = ctx.server->state().JobSummary(*job);
    co_return JsonResponse(req, codec::ToJson(s), s.modify_index);
  });
}

}  // namespace drover::api
