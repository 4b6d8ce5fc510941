// /v1/operator/snapshot: an operator's backup of the server state, in Drover's own
// format (codec/snapshot.h, docs/ha.md), and its restore. GET is served by any server
// from its view; PUT replaces the whole state (a follower sends it to the leader).
// PUT /v1/system/gc: the servers' garbage collection, now (server/core_gc.h).
// GET/PUT /v1/operator/scheduler/configuration: the scheduler configuration.
#include <charconv>

#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"
#include "codec/json.h"
#include "codec/snapshot.h"

namespace drover::api {
namespace {

constexpr int kSchemaVersion = 1;  // server/state_layout.h's

asio::awaitable<Response> SaveSnapshot(ApiContext& ctx, Request& req) {
  const uint64_t index = ctx.server->LatestIndex();
  const std::string region = ctx.server->region();
  auto encode = [records = ctx.server->SnapshotState(), index, region] {
    std::vector<model::StateRecord> all = records();
    return codec::EncodeSnapshot(
        {.region = region, .schema_version = kSchemaVersion, .index = index}, all);
  };
  Response r;
  r.content_type = "application/octet-stream";
  r.body = co_await OffloadRequestWork(ctx, std::move(encode));
  r.headers["X-Nomad-Index"] = std::to_string(index);
  (void)req;
  co_return r;
}

asio::awaitable<Response> RestoreSnapshot(ApiContext& ctx, Request& req) {
  auto decode = [body = std::move(req.body)] { return codec::DecodeSnapshot(body); };
  absl::StatusOr<codec::Snapshot> snapshot = co_await OffloadRequestWork(ctx, std::move(decode));
  if (!snapshot.ok())
    co_return Response::Error(400, std::string(snapshot.status().message()));
  if (snapshot->header.schema_version != kSchemaVersion) {
    co_return Response::Error(400, "the snapshot holds server state of schema version " +
                                       std::to_string(snapshot->header.schema_version) +
                                       "; this server reads version " +
                                       std::to_string(kSchemaVersion));
  }
  if (snapshot->header.region != ctx.server->region()) {
    co_return Response::Error(400, "the snapshot is of region \"" + snapshot->header.region +
                                       "\"; this server is in \"" + ctx.server->region() + "\"");
  }
  absl::Status restored = co_await ctx.server->RestoreState(std::move(snapshot->records));
  if (!restored.ok())
    co_return ErrorResponse(restored);
  Response r;
  r.headers["X-Nomad-Index"] = std::to_string(ctx.server->LatestIndex());
  r.body = "{}";
  co_return r;
}

// A scheduler configuration is a few fields: parsed on the loop, so kept small.
constexpr size_t kMaxSchedulerConfigBytes = 64 << 10;

asio::awaitable<Response> SetSchedulerConfig(ApiContext& ctx, Request& req) {
  std::optional<uint64_t> cas;
  if (std::string v = req.Query("cas"); !v.empty()) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size())
      co_return Response::Error(400, "Error parsing cas value: " + v);
    cas = n;
  }
  if (req.body.size() > kMaxSchedulerConfigBytes) {
    co_return Response::Error(400, "Request body too large: at most " +
                                       std::to_string(kMaxSchedulerConfigBytes) + " bytes here");
  }
  auto parsed = codec::ParseJson(req.body.empty() ? "{}" : req.body);
  if (!parsed.ok())
    co_return Response::Error(
        400, "Error parsing scheduler config: " + std::string(parsed.status().message()));
  // As Nomad: the body is the whole configuration; what it leaves out is zero.
  auto config = codec::SchedulerConfigFromJson(*parsed, model::SchedulerConfig{});
  if (!config.ok())
    co_return Response::Error(
        400, "Invalid scheduler configuration: " + std::string(config.status().message()));
  auto done = co_await ctx.server->SetSchedulerConfigDurably(*std::move(config), cas);
  if (!done.ok())
    co_return ErrorResponse(done.status());
  Response r = JsonResponse(req, codec::Json{{"Updated", done->first}, {"Index", done->second}},
                            done->second);
  r.headers.erase("X-Nomad-KnownLeader");
  r.headers.erase("X-Nomad-LastContact");
  co_return r;
}

}  // namespace

void RegisterOperatorRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/operator/snapshot",
             [&ctx](Request& req) { return SaveSnapshot(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/operator/snapshot",
             [&ctx](Request& req) { return RestoreSnapshot(ctx, req); });
  router.Add({"GET"}, "/v1/operator/scheduler/configuration",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               const model::SchedulerConfig c = ctx.server->SchedulerConfiguration();
               const uint64_t index = std::max<uint64_t>(c.modify_index, 1);
               co_return JsonResponse(req,
                                      codec::Json{{"SchedulerConfig", codec::ToJson(c)},
                                                  {"Index", index},
                                                  {"LastContact", 0},
                                                  {"KnownLeader", true}},
                                      index);
             });
  router.Add({"PUT", "POST"}, "/v1/operator/scheduler/configuration",
             [&ctx](Request& req) { return SetSchedulerConfig(ctx, req); });
  // Nomad answers 200 with no body once the collection is done.
  router.Add({"PUT"}, "/v1/system/gc", [&ctx](Request&) -> asio::awaitable<Response> {
    absl::Status s = co_await ctx.server->CollectGarbage();
    if (!s.ok())
      co_return ErrorResponse(s);
    Response r;
    r.headers["X-Nomad-Index"] = std::to_string(ctx.server->LatestIndex());
    co_return r;
  });
}

}  // namespace drover::api
