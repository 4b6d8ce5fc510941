// /v1/job/:id/versions, /stable, /revert, /evaluate and /plan (docs/jobs.md).
#include <charconv>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/job_request.h"
#include "api/query.h"
#include "codec/job_diff.h"

namespace drover::api {
namespace {

using model::Table;

// The request's body as a JSON object (SmallBodyObject); an absent one is {} unless
// `required`.
absl::StatusOr<codec::Json> BodyObject(const Request& req, bool required) {
  if (req.body.empty() && required)
    return absl::InvalidArgumentError("Request body is empty");
  return SmallBodyObject(req);
}

const codec::Json& Member(const codec::Json& object, const char* key) {
  static const codec::Json null;
  auto it = object.find(key);
  return it == object.end() ? null : *it;
}

absl::StatusOr<std::optional<uint64_t>> OptionalUint(const codec::Json& object, const char* key) {
  const codec::Json& v = Member(object, key);
  if (v.is_null())
    return std::nullopt;
  if (!v.is_number_unsigned())
    return absl::InvalidArgumentError(std::string(key) + ": expected a non-negative integer");
  return v.get<uint64_t>();
}

absl::StatusOr<bool> OptionalBool(const codec::Json& object, const char* key) {
  const codec::Json& v = Member(object, key);
  if (v.is_null())
    return false;
  if (!v.is_boolean())
    return absl::InvalidArgumentError(std::string(key) + ": expected a boolean");
  return v.get<bool>();
}

// JobID in a body must name the job of the path (Nomad's texts).
absl::Status CheckJobId(const codec::Json& body, const std::string& path_id, bool required) {
  const codec::Json& id = Member(body, "JobID");
  if (!id.is_null() && !id.is_string())
    return absl::InvalidArgumentError("JobID: expected a string");
  const std::string given = id.is_string() ? id.get<std::string>() : "";
  if (given.empty()) {
    return required ? absl::InvalidArgumentError("JobID must be specified") : absl::OkStatus();
  }
  if (given != path_id)
    return absl::InvalidArgumentError("Job ID does not match");
  return absl::OkStatus();
}

// The fields of a stability or revert request.
struct VersionRequest {
  uint64_t version = 0;
  bool stable = false;
  std::optional<uint64_t> enforce_prior_version;
};

absl::StatusOr<VersionRequest> DecodeVersionRequest(const Request& req, bool revert) {
  auto body = BodyObject(req, /*required=*/true);
  if (!body.ok())
    return body.status();
  if (absl::Status s = CheckJobId(*body, req.Param("id"), /*required=*/true); !s.ok())
    return s;
  VersionRequest out;
  auto version = OptionalUint(*body, "JobVersion");
  if (!version.ok())
    return version.status();
  out.version = version->value_or(0);
  if (revert) {
    auto enforce = OptionalUint(*body, "EnforcePriorVersion");
    if (!enforce.ok())
      return enforce.status();
    out.enforce_prior_version = *enforce;
  } else {
    auto stable = OptionalBool(*body, "Stable");
    if (!stable.ok())
      return stable.status();
    out.stable = *stable;
  }
  return out;
}

asio::awaitable<Response> Versions(ApiContext& ctx, Request& req) {
  if (req.HasQuery("diff_tag")) {
    co_return Response::Error(400, "diff_tag: version tags are not supported by Drover yet");
  }
  std::optional<uint64_t> diff_version;
  if (std::string v = req.Query("diff_version"); !v.empty()) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size())
      co_return Response::Error(400, "Invalid diff_version: " + v);
    diff_version = n;
  }
  auto index = co_await Block(ctx, req, Table::kJobs);
  if (!index.ok())
    co_return ErrorResponse(index.status());
  std::vector<model::JobPtr> versions = ctx.server->JobVersions(NamespaceOf(req), req.Param("id"));
  if (versions.empty())
    co_return Response::Error(404, "job versions not found");
  model::JobPtr base;
  if (diff_version) {
    for (const model::JobPtr& j : versions) {
      if (j->version == *diff_version)
        base = j;
    }
    if (!base)
      co_return Response::Error(500, "version " + std::to_string(*diff_version) + " not found");
  }
  const bool diffs = QueryBool(req, "diffs", false) || diff_version.has_value();
  const uint64_t at = *index;
  std::function<codec::Json()> build = [versions = std::move(versions), base, diffs, at] {
    codec::Json out = {{"Versions", codec::Json::array()},
                       {"Diffs", nullptr},
                       {"Index", at},
                       {"LastContact", 0},
                       {"KnownLeader", true}};
    for (const model::JobPtr& j : versions)
      out["Versions"].push_back(codec::ToJson(*j));
    if (diffs) {
      // Each version against the one before it (newest first, as Versions), or every
      // version against diff_version.
      codec::Json list = codec::Json::array();
      for (size_t i = 0; i < versions.size(); ++i) {
        if (base) {
          list.push_back(codec::ToJson(codec::DiffJobs(base.get(), versions[i].get(), true)));
        } else if (i + 1 < versions.size()) {
          list.push_back(
              codec::ToJson(codec::DiffJobs(versions[i + 1].get(), versions[i].get(), true)));
        }
      }
      if (!list.empty())
        out["Diffs"] = std::move(list);
    }
    return out;
  };
  co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
}

asio::awaitable<Response> Stable(ApiContext& ctx, Request& req) {
  auto decoded = DecodeVersionRequest(req, /*revert=*/false);
  if (!decoded.ok())
    co_return ErrorResponse(decoded.status());
  std::string ns = NamespaceOf(req);  // named: see GCC 12 in docs/threading.md
  std::string id = req.Param("id");
  auto index = co_await ctx.server->SetJobStabilityDurably(std::move(ns), std::move(id),
                                                           decoded->version, decoded->stable);
  if (!index.ok())
    co_return ErrorResponse(index.status());
  co_return WriteResponse(req, codec::Json{{"Index", *index}}, *index);
}

asio::awaitable<Response> Revert(ApiContext& ctx, Request& req) {
  auto decoded = DecodeVersionRequest(req, /*revert=*/true);
  if (!decoded.ok())
    co_return ErrorResponse(decoded.status());
  std::string ns = NamespaceOf(req);  // named: see GCC 12 in docs/threading.md
  std::string id = req.Param("id");
  auto resp = co_await ctx.server->RevertJobDurably(std::move(ns), std::move(id), decoded->version,
                                                    decoded->enforce_prior_version);
  if (!resp.ok())
    co_return ErrorResponse(resp.status(), /*invalid_is_500=*/true);
  co_return WriteResponse(req, RegisterResponseJson(*resp), resp->index);
}

asio::awaitable<Response> Evaluate(ApiContext& ctx, Request& req) {
  auto body = BodyObject(req, /*required=*/false);
  if (!body.ok())
    co_return ErrorResponse(body.status());
  if (absl::Status s = CheckJobId(*body, req.Param("id"), /*required=*/false); !s.ok())
    co_return ErrorResponse(s);
  const codec::Json& options = Member(*body, "EvalOptions");
  if (!options.is_null() && !options.is_object())
    co_return Response::Error(400, "EvalOptions: expected an object");
  auto force = OptionalBool(options.is_null() ? codec::Json::object() : options, "ForceReschedule");
  if (!force.ok())
    co_return ErrorResponse(force.status());
  std::string ns = NamespaceOf(req);  // named: see GCC 12 in docs/threading.md
  std::string id = req.Param("id");
  auto resp = co_await ctx.server->EvaluateJobDurably(std::move(ns), std::move(id), *force);
  if (!resp.ok())
    co_return ErrorResponse(resp.status());
  co_return WriteResponse(req, RegisterResponseJson(*resp), resp->index);
}

asio::awaitable<Response> Plan(ApiContext& ctx, Request& req) {
  std::string path_id = req.Param("id");  // named: see GCC 12 in docs/threading.md
  auto decoded = co_await DecodeRegisterOffloaded(ctx, req, std::move(path_id));
  if (!decoded.ok())
    co_return DecodeErrorResponse(decoded.status());
  codec::PreparedJob job = *std::move(decoded->job);  // named: see GCC 12
  auto plan = co_await ctx.server->PlanJob(std::move(job), decoded->diff);
  if (!plan.ok())
    co_return ErrorResponse(plan.status(), /*invalid_is_500=*/true);
  plan->warnings.insert(plan->warnings.end(), decoded->warnings.begin(), decoded->warnings.end());
  const uint64_t index = plan->index;
  std::function<codec::Json()> build = [plan = *std::move(plan)] {
    return codec::PlanResponseJson(plan);
  };
  co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), index);
}

}  // namespace

void RegisterJobVersionRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/job/:id/versions",
             [&ctx](Request& req) -> asio::awaitable<Response> { return Versions(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/job/:id/stable",
             [&ctx](Request& req) -> asio::awaitable<Response> { return Stable(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/job/:id/revert",
             [&ctx](Request& req) -> asio::awaitable<Response> { return Revert(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/job/:id/evaluate",
             [&ctx](Request& req) -> asio::awaitable<Response> { return Evaluate(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/job/:id/plan",
             [&ctx](Request& req) -> asio::awaitable<Response> { return Plan(ctx, req); });
}

}  // namespace drover::api
