#include "api/job_request.h"

#include <nlohmann/json.hpp>

#include "api/query.h"
#include "codec/json.h"
#include "codec/unsupported_fields.h"

namespace drover::api {
namespace {

const codec::Json& MemberOrNull(const codec::Json& object, const char* key) {
  static const codec::Json null;
  auto it = object.find(key);
  return it == object.end() ? null : *it;
}

}  // namespace

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
  for (const auto& [key, flag] :
       {std::pair{"EnforceIndex", &out.enforce_index}, std::pair{"Diff", &out.diff}}) {
    const codec::Json& v = MemberOrNull(*parsed, key);
    if (!v.is_null() && !v.is_boolean())
      return absl::InvalidArgumentError(std::string(key) + ": expected a boolean");
    *flag = v.is_boolean() && v.get<bool>();
  }
  const codec::Json& index = MemberOrNull(*parsed, "JobModifyIndex");
  if (!index.is_null() && !index.is_number_unsigned())
    return absl::InvalidArgumentError("JobModifyIndex: expected a non-negative integer");
  out.job_modify_index = index.is_null() ? 0 : index.get<uint64_t>();
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

asio::awaitable<absl::StatusOr<RegisterRequest>> DecodeRegisterOffloaded(ApiContext& ctx,
                                                                         Request& req,
                                                                         std::string path_id) {
  auto work = [body = std::move(req.body), path_id = std::move(path_id), ns = NamespaceOf(req),
               region = req.Query("region"), server_region = ctx.server->region()] {
    return DecodeRegister(body, path_id, ns, region, server_region);
  };
  co_return co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload
}

Response DecodeErrorResponse(const absl::Status& status) {
  return absl::IsInvalidArgument(status) ? Response::Error(400, std::string(status.message()))
                                         : ErrorResponse(status, /*invalid_is_500=*/true);
}

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

}  // namespace drover::api
