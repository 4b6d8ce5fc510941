#include "api/query.h"

#include <charconv>
#include <random>

#include <nlohmann/json.hpp>

#include "common/go_duration.h"
#include "common/offload.h"

namespace drover::api {

namespace {
constexpr common::Duration kMaxWait = std::chrono::minutes(5);

// Indentation multiplies a deeply nested document's size: what ?pretty may make.
constexpr size_t kMaxPrettyBytes = size_t{64} << 20;

// The body of a JSON response: compact, or indented within kMaxPrettyBytes.
absl::StatusOr<std::string> Encode(const codec::Json& body, bool pretty) {
  if (!pretty)
    return codec::Dump(body);
  auto text = codec::DumpBounded(body, true, kMaxPrettyBytes);
  if (!text.ok()) {
    return absl::InvalidArgumentError(std::string(text.status().message()) +
                                      " with ?pretty; ask without it");
  }
  return text;
}

}  // namespace

absl::StatusOr<BlockingParams> ParseBlocking(const Request& req) {
  BlockingParams p;
  if (std::string idx = req.Query("index"); !idx.empty()) {
    auto [ptr, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), p.index);
    if (ec != std::errc() || ptr != idx.data() + idx.size()) {
      return absl::InvalidArgumentError("Invalid index");
    }
  }
  p.wait = kMaxWait;
  if (std::string w = req.Query("wait"); !w.empty()) {
    auto d = common::ParseGoDuration(w);
    if (!d.ok() || d->count() < 0) {
      return absl::InvalidArgumentError("Invalid wait time");
    }
    p.wait = std::min(*d, kMaxWait);
  }
  if (p.wait.count() > 0) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    p.wait += common::Duration(std::uniform_int_distribution<int64_t>(0, p.wait.count() / 16)(rng));
  }
  return p;
}

asio::awaitable<absl::StatusOr<uint64_t>> BlockOn(ApiContext& ctx, const Request& req,
                                                  std::vector<model::Table> tables) {
  auto params = ParseBlocking(req);
  if (!params.ok())
    co_return params.status();
  co_return co_await ctx.server->BlockUntil(std::move(tables), params->index, params->wait);
}

asio::awaitable<absl::StatusOr<uint64_t>> BlockOnObject(ApiContext& ctx, const Request& req,
                                                        std::vector<model::Table> tables,
                                                        std::function<uint64_t()> object_index) {
  auto params = ParseBlocking(req);
  if (!params.ok())
    co_return params.status();
  ServerApi& server = *ctx.server;
  const common::Time deadline = ctx.clock->Now() + params->wait;
  for (;;) {
    const uint64_t obj = object_index();
    if (params->index == 0 || obj > params->index) {
      co_return obj;
    }
    const common::Time now = ctx.clock->Now();
    if (now >= deadline) {
      co_return obj;
    }
    uint64_t table = 0;
    for (model::Table t : tables)
      table = std::max(table, server.TableIndex(t));
    co_await server.BlockUntil(tables, std::max(table, params->index), deadline - now);
  }
}

Response JsonResponse(const Request& req, const codec::Json& body, uint64_t index) {
  absl::StatusOr<std::string> text = Encode(body, req.HasQuery("pretty"));
  if (!text.ok())
    return ErrorResponse(text.status());
  Response r;
  r.body = *std::move(text);
  r.headers["X-Nomad-Index"] = std::to_string(index == 0 ? 1 : index);
  r.headers["X-Nomad-KnownLeader"] = "true";
  r.headers["X-Nomad-LastContact"] = "0";
  return r;
}

Response JsonTextResponse(const Request& req, std::string body, uint64_t index) {
  Response r = JsonResponse(req, codec::Json::array(), index);
  if (req.HasQuery("pretty")) {
    absl::StatusOr<codec::Json> parsed = codec::ParseJson(body);
    absl::StatusOr<std::string> text =
        parsed.ok() ? Encode(*parsed, true) : absl::StatusOr<std::string>(std::move(body));
    if (!text.ok())
      return ErrorResponse(text.status());
    body = *std::move(text);
  }
  r.body = std::move(body);
  return r;
}

asio::awaitable<Response> JsonResponseOffloaded(ApiContext& ctx, const Request& req,
                                                std::function<codec::Json()> build,
                                                uint64_t index) {
  const bool pretty = req.HasQuery("pretty");
  auto work = [build = std::move(build), pretty] { return Encode(build(), pretty); };
  auto body = co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload
  if (!body.ok())
    co_return ErrorResponse(body.status());
  Response r = JsonResponse(req, codec::Json::array(), index);
  r.body = *std::move(body);
  co_return r;
}

std::string NamespaceOf(const Request& req) {
  std::string ns = req.Query("namespace");
  return ns.empty() ? "default" : ns;
}

bool QueryBool(const Request& req, const std::string& key, bool fallback) {
  auto it = req.query.find(key);
  if (it == req.query.end())
    return fallback;
  const std::string& v = it->second;
  if (v.empty())
    return true;
  return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
}

absl::StatusOr<codec::Json> SmallBodyObject(const Request& req, size_t max_bytes) {
  if (req.body.empty())
    return codec::Json::object();
  if (req.body.size() > max_bytes) {
    return absl::InvalidArgumentError("Request body too large: at most " +
                                      std::to_string(max_bytes) + " bytes here");
  }
  auto parsed = codec::ParseJson(req.body);
  if (!parsed.ok() || !parsed->is_object()) {
    return absl::InvalidArgumentError(
        "Failed to decode request body: " +
        std::string(parsed.ok() ? "expected an object" : parsed.status().message()));
  }
  return *std::move(parsed);
}

Response ErrorResponse(const absl::Status& status, bool invalid_is_500) {
  const std::string msg(status.message());
  if (absl::IsNotFound(status))
    return Response::Error(404, msg);
  if (absl::IsPermissionDenied(status))
    return Response::Error(403, msg);
  if (absl::IsInvalidArgument(status) && !invalid_is_500)
    return Response::Error(400, msg);
  return Response::Error(500, msg);
}

}  // namespace drover::api
