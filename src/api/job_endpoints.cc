// /v1/jobs and /v1/job/:id[/...]: list, register, read, deregister, and the job's
// allocations, evaluations and summary.
#include <optional>

#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/unsupported_fields.h"
#include "common/offload.h"

namespace drover::api {
namespace {

using model::Table;

codec::Json RegisterResponseJson(const model::EvalResponse& r) {
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

// What a register request says, decoded, canonicalized and validated.
struct RegisterRequest {
  std::optional<codec::PreparedJob> job;
  std::vector<std::string> warnings;  // accepted but not carried out (unsupported_fields.h)
  bool enforce_index = false;
  uint64_t job_modify_index = 0;
};

// Pool work for PUT/POST /v1/jobs and /v1/job/:id: everything that needs only the
// request (parsing, refusing unsupported fields, decoding, canonicalizing and
// validating), so a large body never holds the control loop. `path_id` is empty for
// /v1/jobs. Errors are 400s.
absl::StatusOr<RegisterRequest> DecodeRegister(const std::string& body, const std::string& path_id,
                                               const std::string& ns, const std::string& region,
                                               const std::string& server_region) {
  if (body.empty()) {
    return absl::InvalidArgumentError("Request body is empty");
  }
  auto parsed = codec::ParseJson(body);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError("Failed to decode request body: " +
                                      std::string(parsed.status().message()));
  }
  if (!parsed->is_object() || !parsed->contains("Job") || (*parsed)["Job"].is_null()) {
    return absl::InvalidArgumentError("Job must be specified");
  }
  if (absl::Status s = codec::CheckSupportedJobFields((*parsed)["Job"]); !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }
  auto job = codec::JobFromJson((*parsed)["Job"]);
  if (!job.ok()) {
    return absl::InvalidArgumentError(job.status().message());
  }
  if (job->id.empty()) {
    return absl::InvalidArgumentError("Job ID hasn't been provided");
  }
  if (!path_id.empty() && job->id != path_id) {
    return absl::InvalidArgumentError("Job ID does not match name");
  }
  if (job->namespace_.empty())
    job->namespace_ = ns;
  if (job->region.empty() && !region.empty())
    job->region = region;
  RegisterRequest out;
  out.warnings = codec::UnusedJobFieldWarnings((*parsed)["Job"]);
  out.enforce_index = parsed->value("EnforceIndex", false);
  out.job_modify_index = parsed->value("JobModifyIndex", uint64_t{0});
  auto prepared = codec::PrepareJob(*std::move(job), server_region);
  if (!prepared.ok()) {
    // Validation problems are Nomad's 500s; the request itself was readable.
    return absl::Status(absl::IsInvalidArgument(prepared.status()) ? absl::StatusCode::kUnknown
                                                                   : prepared.status().code(),
                        prepared.status().message());
  }
  out.job.emplace(*std::move(prepared));
  return out;
}

asio::awaitable<Response> Register(ApiContext& ctx, Request& req, std::string path_id) {
  // The body moves to the pool (nothing reads it here again): never held twice.
  auto work = [body = std::move(req.body), path_id, ns = NamespaceOf(req),
               region = req.Query("region"), server_region = ctx.server->region()] {
    return DecodeRegister(body, path_id, ns, region, server_region);
  };
  auto decoded = co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload
  if (!decoded.ok()) {
    co_return absl::IsInvalidArgument(decoded.status())
        ? Response::Error(400, std::string(decoded.status().message()))
        : ErrorResponse(decoded.status(), /*invalid_is_500=*/true);
  }
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
    std::function<codec::Json()> build = [jobs = std::move(jobs)] {
      codec::Json out = codec::Json::array();
      for (const auto& [j, s] : jobs)
        out.push_back(codec::JobStubJson(*j, &s));
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
