// /v1/client/fs/{ls,stat,cat,readat,stream,logs}/:alloc and
// /v1/client/allocation/:id/snapshot: read-only access to an allocation's directory on
// this node (reference http-api.md; allocdir/fs_view.h does the confinement). Every
// body with file contents is streamed a chunk at a time (fs_follow.h, SnapshotStream),
// so no request holds a whole file in memory however large it is.
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/fs_follow.h"
#include "api/query.h"
#include "client/allocdir/follow_reader.h"
#include "client/allocdir/fs_view.h"
#include "client/allocdir/snapshot.h"
#include "codec/json.h"
#include "common/logging.h"
#include "common/offload.h"

namespace drover::api {

namespace {

using allocdir::AllocDir;
using allocdir::SnapshotStream;

constexpr size_t kSnapshotPieceBytes = 64 << 10;

// Snapshots sent at once: each holds two descriptors per directory level it is in.
constexpr int kMaxSnapshots = 4;

// Counts a snapshot in ctx.snapshots_open while it exists (the response's stream holds
// it, and may be destroyed after the context, with the io_context).
class SnapshotSlot {
 public:
  explicit SnapshotSlot(std::shared_ptr<int> open) : open_(std::move(open)) { ++*open_; }
  ~SnapshotSlot() { --*open_; }
  SnapshotSlot(const SnapshotSlot&) = delete;
  SnapshotSlot& operator=(const SnapshotSlot&) = delete;

 private:
  std::shared_ptr<int> open_;
};

// The allocation's directory, as a handle for the pool work: the client may collect
// the allocation meanwhile, and reads then fail.
absl::StatusOr<allocdir::AllocDirLocation> Locate(ApiContext& ctx, const std::string& id) {
  if (ctx.client == nullptr)
    return UnknownAllocation(id);
  return ctx.client->AllocDirOf(id);
}

codec::Json FileInfoJson(const allocdir::FileInfo& f) {
  return {{"Name", f.name},
          {"IsDir", f.is_dir},
          {"Size", f.size},
          {"FileMode", f.file_mode},
          {"ModTime", codec::FormatTime(common::FromUnixNanos(f.mod_time_ns))},
          {"ContentType", f.content_type}};
}

absl::StatusOr<int64_t> IntQuery(const Request& req, const std::string& key, int64_t fallback) {
  const std::string v = req.Query(key);
  if (v.empty())
    return fallback;
  try {
    size_t used = 0;
    const int64_t n = std::stoll(v, &used);
    if (used == v.size())
      return n;
  } catch (const std::exception&) {
  }
  return absl::InvalidArgumentError("invalid " + key + " \"" + v + "\"");
}

// `origin` (start|end) and `offset` of the logs and stream endpoints.
struct Position {
  int64_t offset = 0;
  bool from_end = false;
};
absl::StatusOr<Position> ParsePosition(const Request& req) {
  const std::string origin = req.HasQuery("origin") ? req.Query("origin") : "start";
  if (origin != "start" && origin != "end")
    return absl::InvalidArgumentError("origin must be start or end");
  auto offset = IntQuery(req, "offset", 0);
  if (!offset.ok())
    return offset.status();
  if (*offset < 0)
    return absl::InvalidArgumentError("offset must not be negative");
  return Position{*offset, origin == "end"};
}

// A response whose body follows files (fs_follow.h).
Response Streamed(ApiContext& ctx, FollowSpec spec) {
  Response r;
  r.content_type = spec.plain ? "text/plain; charset=utf-8" : "application/json";
  r.stream = [&ctx, spec = std::move(spec)](StreamWriter& out) {
    return FollowFiles(ctx, spec, out);
  };
  return r;
}

// Sends the archive a piece at a time, each made on the pool.
asio::awaitable<void> SendSnapshot(ApiContext& ctx, std::shared_ptr<SnapshotStream> snap,
                                   std::string id, StreamWriter& out) {
  for (;;) {
    auto next = [snap] { return snap->Next(kSnapshotPieceBytes); };
    std::string piece = co_await OffloadRequestWork(ctx, std::move(next));  // named: see Offload
    if (piece.empty())
      break;
    if (!co_await out.Write(std::move(piece)))
      break;
  }
  if (!snap->status().ok())
    DROVER_LOG_WARN("snapshot of alloc {}: {}", id, snap->status().ToString());
}

}  // namespace

namespace {

void AddSnapshotRoute(Router& router, ApiContext& ctx) {
  // The allocation's ephemeral data as a tar archive, for a replacement on another node
  // to migrate (reference §7), given the migrate token (common/derived_token.h) as
  // X-Nomad-Token. A failed walk still answers 200: the archive then ends
  // with NOMAD-<id>-ERROR.log, which the receiver reports.
  router.Add({"GET"}, "/v1/client/allocation/:id/snapshot",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               if (ctx.client == nullptr)
                 co_return ErrorResponse(UnknownAllocation(req.Param("id")));
               // Only a replacement allocation's node, which the servers gave the
               // token derived from this node's secret, may take the data.
               auto source = ctx.client->SnapshotOf(req.Param("id"), req.Header("x-nomad-token"));
               if (!source.ok())
                 co_return ErrorResponse(source.status());
               if (*ctx.snapshots_open >= kMaxSnapshots) {
                 Response busy = Response::Error(503, "Too many snapshots being sent; retry");
                 busy.headers["Retry-After"] = "1";
                 co_return busy;
               }
               auto slot = std::make_shared<SnapshotSlot>(ctx.snapshots_open);
               auto open = [source = *std::move(
                                source)]() -> absl::StatusOr<std::shared_ptr<SnapshotStream>> {
                 auto s = SnapshotStream::Open(AllocDir(source.dir), source.dir.alloc_id,
                                               source.tasks, source.max_data_bytes);
                 if (!s.ok())
                   return s.status();
                 return std::shared_ptr<SnapshotStream>(std::move(*s));
               };
               auto stream = co_await OffloadRequestWork(ctx, std::move(open));
               if (!stream.ok())
                 co_return ErrorResponse(stream.status());
               Response r;
               r.content_type = "application/x-tar";
               r.stream = [&ctx, snap = *stream, id = req.Param("id"), slot](StreamWriter& out) {
                 return SendSnapshot(ctx, snap, id, out);
               };
               co_return r;
             });
}

void AddListAndStatRoutes(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/client/fs/ls/:alloc", [&ctx](Request& req) -> asio::awaitable<Response> {
    auto loc = Locate(ctx, req.Param("alloc"));
    if (!loc.ok())
      co_return ErrorResponse(loc.status());
    const std::string path = req.HasQuery("path") ? req.Query("path") : "/";
    auto work = [loc = *loc, path] { return allocdir::ListDir(AllocDir(loc), path); };
    auto listed = co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload()
    if (!listed.ok())
      co_return ErrorResponse(listed.status());
    codec::Json out = codec::Json::array();
    for (const auto& f : *listed)
      out.push_back(FileInfoJson(f));
    co_return JsonResponse(req, out, 0);
  });
  router.Add({"GET"}, "/v1/client/fs/stat/:alloc",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto loc = Locate(ctx, req.Param("alloc"));
               if (!loc.ok())
                 co_return ErrorResponse(loc.status());
               const std::string path = req.HasQuery("path") ? req.Query("path") : "/";
               auto work = [loc = *loc, path] { return allocdir::StatPath(AllocDir(loc), path); };
               auto info = co_await OffloadRequestWork(ctx, std::move(work));
               if (!info.ok())
                 co_return ErrorResponse(info.status());
               co_return JsonResponse(req, FileInfoJson(*info), 0);
             });
}

void AddReadRoutes(Router& router, ApiContext& ctx) {
  // cat: the whole file; readat: `limit` bytes from `offset`. Both stream the bytes that
  // were there when the request came, a chunk at a time, however large the file.
  for (const char* op : {"cat", "readat"}) {
    const bool ranged = std::string(op) == "readat";
    router.Add({"GET"}, std::string("/v1/client/fs/") + op + "/:alloc",
               [&ctx, ranged](Request& req) -> asio::awaitable<Response> {
                 auto loc = Locate(ctx, req.Param("alloc"));
                 if (!loc.ok())
                   co_return ErrorResponse(loc.status());
                 const std::string path = req.Query("path");
                 if (path.empty())
                   co_return Response::Error(400, "must provide a file name");
                 auto offset = IntQuery(req, "offset", 0);
                 auto limit = IntQuery(req, "limit", -1);
                 if (!offset.ok() || !limit.ok())
                   co_return ErrorResponse(offset.ok() ? limit.status() : offset.status());
                 if (ranged && *offset < 0)
                   co_return Response::Error(400, "offset must not be negative");
                 auto work = [loc = *loc, path] {
                   return allocdir::StatReadable(AllocDir(loc), path);
                 };
                 auto info = co_await OffloadRequestWork(ctx, std::move(work));
                 if (!info.ok())
                   co_return ErrorResponse(info.status());
                 if (info->is_dir)
                   co_return Response::Error(400, "\"" + path + "\" is a directory");
                 const int64_t from = ranged ? *offset : 0;
                 int64_t count = std::max<int64_t>(info->size - from, 0);
                 if (ranged && *limit >= 0)
                   count = std::min(count, *limit);
                 co_return Streamed(
                     ctx, FollowSpec{.dir = *loc,
                                     .target = {.path = path, .offset = from, .limit = count},
                                     .plain = true,
                                     .follow = false});
               });
  }
}

void AddStreamRoute(Router& router, ApiContext& ctx) {
  // A file as it grows: frames (or raw bytes with plain=true) from `offset`, following
  // by default until the client hangs up or the allocation is gone.
  router.Add(
      {"GET"}, "/v1/client/fs/stream/:alloc", [&ctx](Request& req) -> asio::awaitable<Response> {
        auto loc = Locate(ctx, req.Param("alloc"));
        if (!loc.ok())
          co_return ErrorResponse(loc.status());
        const std::string path = req.Query("path");
        if (path.empty())
          co_return Response::Error(400, "must provide a file name");
        auto pos = ParsePosition(req);
        if (!pos.ok())
          co_return ErrorResponse(pos.status());
        // Readable at all (secrets are not): checked while a status can say so.
        auto work = [loc = *loc, path] { return allocdir::StatReadable(AllocDir(loc), path); };
        auto info = co_await OffloadRequestWork(ctx, std::move(work));
        if (!info.ok()) {
          // A missing file is a bad request here (there is nothing to stream); an
          // escape is still forbidden.
          co_return absl::IsNotFound(info.status())
              ? Response::Error(400, std::string(info.status().message()))
              : ErrorResponse(info.status());
        }
        if (info->is_dir)
          co_return Response::Error(400, "file \"" + path + "\" is a directory");
        co_return Streamed(
            ctx,
            FollowSpec{.dir = *loc,
                       .target = {.path = path, .offset = pos->offset, .from_end = pos->from_end},
                       .plain = QueryBool(req, "plain", false),
                       .follow = QueryBool(req, "follow", true)});
      });
}

void AddLogsRoute(Router& router, ApiContext& ctx) {
  router.Add({"GET"}, "/v1/client/fs/logs/:alloc",
             [&ctx](Request& req) -> asio::awaitable<Response> {
               auto loc = Locate(ctx, req.Param("alloc"));
               if (!loc.ok())
                 co_return ErrorResponse(loc.status());
               const std::string task = req.Query("task");
               const std::string type = req.Query("type");
               if (task.empty())
                 co_return Response::Error(400, "must provide task name");
               if (type != "stdout" && type != "stderr")
                 co_return Response::Error(400, "must provide log type (stdout/stderr)");
               auto pos = ParsePosition(req);
               if (!pos.ok())
                 co_return ErrorResponse(pos.status());
               const bool plain = QueryBool(req, "plain", false);
               const bool follow = QueryBool(req, "follow", false);
               // Errors (an unknown task) while a status can still say so; without
               // follow, what there is now is all that is sent.
               auto size = [loc = *loc, task, type] {
                 return allocdir::LogSize(AllocDir(loc), task, type);
               };
               auto total = co_await OffloadRequestWork(ctx, std::move(size));
               if (!total.ok())
                 co_return ErrorResponse(total.status());
               int64_t limit = -1;
               if (!follow) {
                 const int64_t start = pos->from_end ? std::max<int64_t>(*total - pos->offset, 0)
                                                     : std::min(pos->offset, *total);
                 limit = *total - start;
               }
               co_return Streamed(ctx, FollowSpec{.dir = *loc,
                                                  .target = {.task = task,
                                                             .type = type,
                                                             .offset = pos->offset,
                                                             .from_end = pos->from_end,
                                                             .limit = limit},
                                                  .plain = plain,
                                                  .follow = follow});
             });
}

}  // namespace

void RegisterFsRoutes(Router& router, ApiContext& ctx) {
  AddSnapshotRoute(router, ctx);
  AddListAndStatRoutes(router, ctx);
  AddReadRoutes(router, ctx);
  AddStreamRoute(router, ctx);
  AddLogsRoute(router, ctx);
}

}  // namespace drover::api
