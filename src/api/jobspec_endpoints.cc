// POST /v1/jobs/parse (HCL job file → bare API job) and PUT /v1/validate/job (what
// `drover job validate` asks the server). Parsing runs on the blocking pool: a job
// file may be megabytes.
#include <functional>
#include <string>

#include "absl/strings/ascii.h"
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/canonicalize.h"
#include "codec/unsupported_fields.h"
#include "codec/validate.h"
#include "common/offload.h"
#include "jobspec/jobspec.h"

namespace drover::api {
namespace {

// Defaults applied as registration would, keeping the parsed value of every field the
// model does not hold (Update, Periodic, ...) where canonicalization left a null.
void MergeMissing(codec::Json& canonical, const codec::Json& parsed) {
  if (!canonical.is_object() || !parsed.is_object()) {
    return;
  }
  for (auto it = parsed.begin(); it != parsed.end(); ++it) {
    auto c = canonical.find(it.key());
    if (c == canonical.end() || c->is_null()) {
      canonical[it.key()] = it.value();
    } else if (c->is_object()) {
      MergeMissing(*c, it.value());
    } else if (c->is_array() && it->is_array() && c->size() == it->size()) {
      for (size_t i = 0; i < c->size(); ++i) {
        MergeMissing((*c)[i], (*it)[i]);
      }
    }
  }
}

// Sets `key` to `value` where the block left it out (Nomad's api Canonicalize sets
// every nil pointer).
void Default(codec::Json& block, const char* key, codec::Json value) {
  if (!block.contains(key) || block[key].is_null())
    block[key] = std::move(value);
}

// Nomad's api Canonicalize for the blocks the model does not hold (registration refuses
// them, but /v1/jobs/parse shows them): templates, artifacts, vault, affinities,
// spreads and volume mounts.
void CanonicalizeUnmodeled(codec::Json& job) {
  using codec::Json;
  constexpr int64_t kNanosPerSecond = 1'000'000'000;
  const auto each = [](Json& parent, const char* key, const std::function<void(Json&)>& fn) {
    if (parent.is_object() && parent.contains(key) && parent[key].is_array()) {
      for (Json& item : parent[key]) {
        if (item.is_object())
          fn(item);
      }
    }
  };
  const auto weight = [](Json& a) { Default(a, "Weight", 50); };
  each(job, "Affinities", weight);
  each(job, "Spreads", weight);
  each(job, "TaskGroups", [&](Json& group) {
    each(group, "Affinities", weight);
    each(group, "Spreads", weight);
    each(group, "Tasks", [&](Json& task) {
      each(task, "Affinities", weight);
      each(task, "Templates", [&](Json& t) {
        for (const char* key : {"SourcePath", "DestPath", "EmbeddedTmpl"})
          Default(t, key, "");
        Default(t, "ChangeMode", "restart");
        if (t.contains("ChangeSignal") && t["ChangeSignal"].is_string()) {
          t["ChangeSignal"] = absl::AsciiStrToUpper(t["ChangeSignal"].get<std::string>());
        } else {
          t["ChangeSignal"] = t["ChangeMode"] == "signal" ? "SIGHUP" : "";
        }
        Default(t, "Splay", 5 * kNanosPerSecond);
        Default(t, "Perms", "0644");
        Default(t, "LeftDelim", "{{");
        Default(t, "RightDelim", "}}");
        Default(t, "Envvars", false);
        Default(t, "ErrMissingKey", false);
        Default(t, "VaultGrace", 0);
      });
      each(task, "Artifacts", [](Json& a) {
        Default(a, "GetterMode", "any");
        Default(a, "GetterSource", "");
        if (!a.contains("RelativeDest") || a["RelativeDest"].is_null()) {
          const std::string source = a["GetterSource"].get<std::string>();
          a["RelativeDest"] = a["GetterMode"] == "file"
                                  ? "local/" + source.substr(source.find_last_of('/') + 1)
                                  : "local/";
        }
      });
      each(task, "VolumeMounts", [](Json& m) {
        Default(m, "ReadOnly", false);
        Default(m, "PropagationMode", "private");
      });
      if (task.contains("Vault") && task["Vault"].is_object()) {
        Json& v = task["Vault"];
        Default(v, "Env", true);
        Default(v, "DisableFile", false);
        Default(v, "Namespace", "");
        Default(v, "Cluster", "default");
        Default(v, "ChangeMode", "restart");
        Default(v, "ChangeSignal", "SIGHUP");
        Default(v, "AllowTokenExpiration", false);
      }
    });
  });
}

struct ParseResult {
  int status = 200;
  std::string error;
  codec::Json job;
};

ParseResult ParseRequest(const std::string& body) {
  absl::StatusOr<codec::Json> request = codec::ParseJson(body);
  if (!request.ok() || !request->is_object()) {
    return {
        400,
        "Failed to decode request body: " +
            (request.ok() ? std::string("not an object") : std::string(request.status().message())),
        {}};
  }
  const std::string hcl = request->value("JobHCL", "");
  if (hcl.empty()) {
    return {400, "Job spec is empty", {}};
  }
  jobspec::ParseOptions options;  // no file(): the server does not read its own disk
  if (const std::string vars = request->value("Variables", ""); !vars.empty()) {
    options.var_files.emplace_back("variables.hcl", vars);
  }
  absl::StatusOr<codec::Json> job = jobspec::ParseJob("input.hcl", hcl, options);
  if (!job.ok()) {
    return {400, "Failed to parse job: " + std::string(job.status().message()), {}};
  }
  if (!request->value("Canonicalize", false)) {
    return {200, "", std::move(*job)};
  }
  absl::StatusOr<model::Job> decoded = codec::JobFromJson(*job);
  if (!decoded.ok()) {
    return {400, "Failed to parse job: " + std::string(decoded.status().message()), {}};
  }
  codec::CanonicalizeJob(*decoded);
  codec::Json canonical = codec::ToJson(*decoded);
  MergeMissing(canonical, *job);
  CanonicalizeUnmodeled(canonical);
  return {200, "", std::move(canonical)};
}

// The validation answer; a body that is not JSON (or is past the JSON limits) is a
// bad request, as for register.
absl::StatusOr<codec::Json> ValidateRequest(const std::string& body) {
  codec::Json out = {{"DriverConfigValidated", false},
                     {"ValidationErrors", codec::Json::array()},
                     {"Error", ""},
                     {"Warnings", ""}};
  auto fail = [&out](const std::string& message) {
    out["ValidationErrors"].push_back(message);
    out["Error"] = message;
    return out;
  };
  absl::StatusOr<codec::Json> request = codec::ParseJson(body);
  if (!request.ok()) {
    return absl::InvalidArgumentError("Failed to decode request body: " +
                                      std::string(request.status().message()));
  }
  if (!request->is_object() || !request->contains("Job") || !(*request)["Job"].is_object()) {
    return fail("Job must be specified");
  }
  const codec::Json& job_json = (*request)["Job"];
  if (absl::Status s = codec::CheckSupportedJobFields(job_json); !s.ok()) {
    return fail(std::string(s.message()));
  }
  absl::StatusOr<model::Job> job = codec::JobFromJson(job_json);
  if (!job.ok()) {
    return fail(std::string(job.status().message()));
  }
  codec::CanonicalizeJob(*job);
  if (absl::Status s = codec::ValidateJob(*job); !s.ok()) {
    return fail(std::string(s.message()));
  }
  return out;
}

}  // namespace

void RegisterJobspecRoutes(Router& router, ApiContext& ctx) {
  router.Add({"PUT", "POST"}, "/v1/jobs/parse", [&ctx](Request& req) -> asio::awaitable<Response> {
    // The body moves to the pool (nothing reads it here again): never held twice.
    auto work = [body = std::move(req.body)] { return ParseRequest(body); };
    ParseResult result;
    if (ctx.pool != nullptr) {
      result = co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload
    } else {
      result = work();
    }
    if (result.status != 200) {
      co_return Response::Error(result.status, result.error);
    }
    if (ctx.pool == nullptr)
      co_return JsonResponse(req, result.job, 0);
    // Encoded on the pool too: the job is as large as the body was.
    std::function<codec::Json()> build = [job = std::move(result.job)]() mutable {
      return std::move(job);
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), 0);
  });
  router.Add({"PUT", "POST"}, "/v1/validate/job",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto work = [body = std::move(req.body)] { return ValidateRequest(body); };
               absl::StatusOr<codec::Json> result;
               if (ctx.pool != nullptr) {
                 result = co_await OffloadRequestWork(ctx, std::move(work));
               } else {
                 result = work();
               }
               if (!result.ok())
                 co_return ErrorResponse(result.status());
               co_return JsonResponse(req, *result, 0);
             });
}

}  // namespace drover::api
