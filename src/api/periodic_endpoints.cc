// POST /v1/job/:id/periodic/force and /v1/job/:id/dispatch (docs/jobs.md#periodic-jobs,
// docs/jobs.md#parameterized-jobs).
#include "absl/strings/escaping.h"
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/job_request.h"
#include "api/query.h"

namespace drover::api {
namespace {

// A dispatch body: a 16 KiB payload is 22 KiB as base64, and meta goes with it. A
// payload beyond 16 KiB that fits is refused by the server with Nomad's message.
constexpr size_t kMaxDispatchBodyBytes = 128 << 10;

absl::StatusOr<model::DispatchRequest> DecodeDispatch(const Request& req) {
  auto parsed = SmallBodyObject(req, kMaxDispatchBodyBytes);
  if (!parsed.ok())
    return parsed.status();
  const codec::Json& body = *parsed;
  model::DispatchRequest out{.ns = NamespaceOf(req), .job_id = req.Param("id")};
  const auto string_member = [&body](const char* key, std::string& value) -> absl::Status {
    auto it = body.find(key);
    if (it == body.end() || it->is_null())
      return absl::OkStatus();
    if (!it->is_string())
      return absl::InvalidArgumentError(std::string(key) + ": expected a string");
    value = it->get<std::string>();
    return absl::OkStatus();
  };
  std::string job_id, payload;
  for (const auto& [key, value] : {std::pair{"JobID", &job_id}, std::pair{"Payload", &payload},
                                   std::pair{"IdempotencyToken", &out.idempotency_token},
                                   std::pair{"IdPrefixTemplate", &out.id_prefix_template}}) {
    if (absl::Status s = string_member(key, *value); !s.ok())
      return s;
  }
  if (!job_id.empty() && job_id != out.job_id)
    return absl::InvalidArgumentError("Job ID does not match");
  if (!payload.empty() && !absl::Base64Unescape(payload, &out.payload))
    return absl::InvalidArgumentError("Payload: invalid base64");
  if (auto meta = body.find("Meta"); meta != body.end() && !meta->is_null()) {
    if (!meta->is_object())
      return absl::InvalidArgumentError("Meta: expected an object of strings");
    for (const auto& [key, value] : meta->items()) {
      if (!value.is_string())
        return absl::InvalidArgumentError("Meta." + key + ": expected a string");
      out.meta[key] = value.get<std::string>();
    }
  }
  return out;
}

asio::awaitable<Response> Dispatch(ApiContext& ctx, Request& req) {
  auto decoded = DecodeDispatch(req);
  if (!decoded.ok())
    co_return ErrorResponse(decoded.status());
  model::DispatchRequest request = *std::move(decoded);
  auto resp = co_await ctx.server->DispatchJobDurably(std::move(request));
  if (!resp.ok())
    co_return ErrorResponse(resp.status());
  const codec::Json body = {{"DispatchedJobID", resp->dispatched_job_id},
                            {"EvalID", resp->eval_id},
                            {"EvalCreateIndex", resp->eval_create_index},
                            {"JobCreateIndex", resp->job_create_index},
                            {"Index", resp->index}};
  co_return WriteResponse(req, body, resp->index);
}

asio::awaitable<Response> ForcePeriodic(ApiContext& ctx, Request& req) {
  std::string ns = NamespaceOf(req);
  std::string id = req.Param("id");
  auto resp = co_await ctx.server->ForcePeriodicDurably(std::move(ns), std::move(id));
  if (!resp.ok())
    co_return ErrorResponse(resp.status());
  const codec::Json body = {{"EvalID", resp->eval_id},
                            {"EvalCreateIndex", resp->eval_create_index},
                            {"Index", resp->index}};
  co_return WriteResponse(req, body, resp->index);
}

}  // namespace

void RegisterPeriodicRoutes(Router& router, ApiContext& ctx) {
  router.Add({"PUT", "POST"}, "/v1/job/:id/periodic/force",
             [&ctx](Request& req) { return ForcePeriodic(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/job/:id/dispatch",
             [&ctx](Request& req) { return Dispatch(ctx, req); });
}

}  // namespace drover::api
