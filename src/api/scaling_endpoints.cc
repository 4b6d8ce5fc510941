// POST/GET /v1/job/:id/scale, GET /v1/scaling/policies and /v1/scaling/policy/:id
// (docs/jobs.md#scaling).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/job_request.h"
#include "api/query.h"

namespace drover::api {
namespace {

using model::Table;

// What one event may hold: each group keeps 20 in the job's scaling record, which must
// stay well within one etcd request.
constexpr size_t kMaxMessageBytes = 1 << 10;
constexpr size_t kMaxMetaBytes = 4 << 10;

absl::StatusOr<ServerApi::ScaleRequest> DecodeScale(const Request& req) {
  auto parsed = SmallBodyObject(req);
  if (!parsed.ok())
    return parsed.status();
  const codec::Json& body = *parsed;
  ServerApi::ScaleRequest out{.ns = NamespaceOf(req), .job_id = req.Param("id")};
  const auto member = [&body](const char* key) -> const codec::Json* {
    auto it = body.find(key);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const codec::Json* target = member("Target")) {
    if (!target->is_object())
      return absl::InvalidArgumentError("Target: expected an object");
    for (const auto& [key, value] : target->items()) {
      if (!value.is_string())
        return absl::InvalidArgumentError("Target." + key + ": expected a string");
    }
    if (auto job = target->find("Job"); job != target->end() && *job != "" && *job != out.job_id)
      return absl::InvalidArgumentError("job ID in payload did not match URL");
    if (auto group = target->find("Group"); group != target->end())
      out.group = group->get<std::string>();
  }
  if (out.group.empty())
    return absl::InvalidArgumentError("missing task group name for scaling action");
  if (const codec::Json* count = member("Count")) {
    if (!count->is_number_integer())
      return absl::InvalidArgumentError("Count: expected an integer");
    out.count = count->get<int64_t>();
  }
  if (const codec::Json* message = member("Message")) {
    if (!message->is_string())
      return absl::InvalidArgumentError("Message: expected a string");
    out.message = message->get<std::string>();
    if (out.message.size() > kMaxMessageBytes)
      return absl::InvalidArgumentError("Message: at most " + std::to_string(kMaxMessageBytes) +
                                        " bytes");
  }
  if (const codec::Json* error = member("Error")) {
    if (!error->is_boolean())
      return absl::InvalidArgumentError("Error: expected a boolean");
    out.error = error->get<bool>();
  }
  if (const codec::Json* meta = member("Meta")) {
    if (!meta->is_object())
      return absl::InvalidArgumentError("Meta: expected an object");
    if (meta->dump().size() > kMaxMetaBytes)
      return absl::InvalidArgumentError("Meta: at most " + std::to_string(kMaxMetaBytes) +
                                        " bytes encoded");
    for (const auto& [key, value] : meta->items())
      out.meta[key] = codec::ValueFromJson(value);
  }
  return out;
}

asio::awaitable<Response> Scale(ApiContext& ctx, Request& req) {
  auto decoded = DecodeScale(req);
  if (!decoded.ok())
    co_return ErrorResponse(decoded.status());
  auto resp = co_await ctx.server->ScaleJobDurably(*std::move(decoded));
  if (!resp.ok())
    co_return ErrorResponse(resp.status());
  co_return WriteResponse(req, RegisterResponseJson(*resp), resp->index);
}

// Nomad's JobScaleStatus: per group its count and its allocations of the registered
// job (placed: meant to run and not finished; running; healthy or not, as their clients
// reported), and its scaling events, newest first.
codec::Json ScaleStatusJson(const model::Job& job, const std::vector<model::AllocPtr>& allocs,
                            const model::JobScalingEvents* events) {
  codec::Json groups = codec::Json::object();
  for (const model::TaskGroup& g : job.task_groups) {
    int64_t placed = 0, running = 0, healthy = 0, unhealthy = 0;
    for (const model::AllocPtr& a : allocs) {
      if (a->task_group != g.name || !a->job || a->job->create_index != job.create_index ||
          a->desired_status != model::kDesiredRun || a->ClientTerminal())
        continue;
      ++placed;
      running += a->client_status == model::kClientRunning ? 1 : 0;
      if (a->deployment_status && a->deployment_status->healthy)
        ++(*a->deployment_status->healthy ? healthy : unhealthy);
    }
    codec::Json list = codec::Json::array();
    if (events != nullptr) {
      if (auto it = events->events.find(g.name); it != events->events.end()) {
        for (const model::ScalingEvent& e : it->second)
          list.push_back(codec::ToJson(e));
      }
    }
    groups[g.name] = {{"Desired", g.count}, {"Placed", placed},       {"Running", running},
                      {"Healthy", healthy}, {"Unhealthy", unhealthy}, {"Events", std::move(list)}};
  }
  return {{"JobID", job.id},
          {"Namespace", job.namespace_},
          {"JobCreateIndex", job.create_index},
          {"JobModifyIndex", job.job_modify_index},
          {"JobStopped", job.stop},
          {"TaskGroups", std::move(groups)}};
}

}  // namespace

void RegisterScalingRoutes(Router& router, ApiContext& ctx) {
  router.Add({"PUT", "POST"}, "/v1/job/:id/scale",
             [&ctx](Request& req) { return Scale(ctx, req); });
  router.Add({"GET"}, "/v1/job/:id/scale", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kJobs, Table::kAllocs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    const std::string ns = NamespaceOf(req);
    model::JobPtr job = ctx.server->GetJob(ns, req.Param("id"));
    if (!job)
      co_return Response::Error(404, "job not found");
    std::function<codec::Json()> build = [job, allocs = ctx.server->AllocsByJob(ns, job->id),
                                          events = ctx.server->ScalingEvents(ns, job->id)] {
      return ScaleStatusJson(*job, allocs, events.get());
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/scaling/policies", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kJobs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    const std::string job_filter = req.Query("job");
    const std::string type_filter = req.Query("type");
    std::function<codec::Json()> build = [jobs = ctx.server->ListJobs(NamespaceOf(req), ""),
                                          job_filter, type_filter] {
      std::vector<std::pair<std::string, codec::Json>> stubs;
      for (const model::JobPtr& job : jobs) {
        if (!job_filter.empty() && job->id != job_filter)
          continue;
        for (const model::TaskGroup& g : job->task_groups) {
          if (g.scaling && (type_filter.empty() || g.scaling->type == type_filter))
            stubs.emplace_back(g.scaling->id, codec::ScalingPolicyStubJson(*job, g));
        }
      }
      std::sort(stubs.begin(), stubs.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      codec::Json out = codec::Json::array();
      for (auto& [id, stub] : stubs)
        out.push_back(std::move(stub));
      return out;
    };
    co_return co_await JsonResponseOffloaded(ctx, req, std::move(build), *index);
  });
  router.Add({"GET"}, "/v1/scaling/policy/:id", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto index = co_await Block(ctx, req, Table::kJobs);
    if (!index.ok())
      co_return ErrorResponse(index.status());
    const std::string id = req.Param("id");
    for (const model::JobPtr& job : ctx.server->ListJobs("*", "")) {
      for (const model::TaskGroup& g : job->task_groups) {
        if (g.scaling && g.scaling->id == id)
          co_return JsonResponse(req, codec::ScalingPolicyJson(*job, g), *index);
      }
    }
    co_return Response::Error(404, "policy not found");
  });
}

}  // namespace drover::api
