// /v1/operator/snapshot: an operator's backup of the server state, in Drover's own
// format (codec/snapshot.h, docs/ha.md), and its restore. GET is served by any server
// from its view; PUT replaces the whole state (a follower sends it to the leader).
// PUT /v1/system/gc: the servers' garbage collection, now (server/core_gc.h).
#include "api/api_context.h"
#include "api/query.h"
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

}  // namespace

void RegisterOperatorRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/operator/snapshot",
             [&ctx](Request& req) { return SaveSnapshot(ctx, req); });
  router.Add({"PUT", "POST"}, "/v1/operator/snapshot",
             [&ctx](Request& req) { return RestoreSnapshot(ctx, req); });
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
