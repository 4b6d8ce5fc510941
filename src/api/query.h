// Shared handler plumbing: blocking-query parameters, Nomad's response headers, JSON
// responses (encoded on the blocking pool when large), and request-body decoding.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "api/api_context.h"
#include "api/http_types.h"
#include "codec/json.h"
#include "model/server_types.h"

namespace drover::api {

struct BlockingParams {
  uint64_t index = 0;
  common::Duration wait{0};
};

// `index` and `wait` (Go duration; default and cap 5 minutes, plus up to wait/16 of
// jitter). Errors are Nomad's 400 texts: "Invalid index", "Invalid wait time".
absl::StatusOr<BlockingParams> ParseBlocking(const Request& req);

// Runs the blocking query over `tables` and returns the index to report, or an error
// for bad parameters.
asio::awaitable<absl::StatusOr<uint64_t>> BlockOn(ApiContext& ctx, const Request& req,
                                                  std::vector<model::Table> tables);
// Not a coroutine: builds the table list outside the caller's co_await expression
// (GCC 12 rejects braced lists there).
template <typename... Tables>
asio::awaitable<absl::StatusOr<uint64_t>> Block(ApiContext& ctx, const Request& req,
                                                Tables... tables) {
  return BlockOn(ctx, req, std::vector<model::Table>{tables...});
}

// For single-object reads: like Block(), but keeps waiting while the object's own index
// (`object_index()`, 0 when the object is absent) is not above the requested index, as
// Nomad's blockingRPC does; otherwise clients polling one object would spin whenever
// some other object of the table changed. Returns the index to report.
asio::awaitable<absl::StatusOr<uint64_t>> BlockOnObject(ApiContext& ctx, const Request& req,
                                                        std::vector<model::Table> tables,
                                                        std::function<uint64_t()> object_index);
template <typename... Tables>
asio::awaitable<absl::StatusOr<uint64_t>> BlockObject(ApiContext& ctx, const Request& req,
                                                      std::function<uint64_t()> object_index,
                                                      Tables... tables) {
  return BlockOnObject(ctx, req, std::vector<model::Table>{tables...}, std::move(object_index));
}

// 200 with JSON (indented with ?pretty) and the read headers X-Nomad-Index,
// X-Nomad-KnownLeader, X-Nomad-LastContact.
Response JsonResponse(const Request& req, const codec::Json& body, uint64_t index);
// Same for a body already encoded as compact JSON text (re-indented with ?pretty).
Response JsonTextResponse(const Request& req, std::string body, uint64_t index);
// Same, but `build` runs on the blocking pool: for list endpoints whose encoding may be
// large. `build` must only touch immutable snapshots. Pass a named std::function
// (see common/offload.h on lambda temporaries in co_await).
asio::awaitable<Response> JsonResponseOffloaded(ApiContext& ctx, const Request& req,
                                                std::function<codec::Json()> build, uint64_t index);

// What most write bodies may be: they name a task, a job version or a group, and are
// parsed on the control loop, so they are kept small.
inline constexpr size_t kMaxSmallBodyBytes = 64 << 10;
// The body as a JSON object, parsed here (on the loop): {} when empty; InvalidArgument
// "Request body too large: at most N bytes here" past `max_bytes`, and "Failed to
// decode request body: ..." for anything but an object.
absl::StatusOr<codec::Json> SmallBodyObject(const Request& req,
                                            size_t max_bytes = kMaxSmallBodyBytes);

// Namespace from ?namespace=, default "default".
std::string NamespaceOf(const Request& req);
// ParseBool as Go does ("1", "t", "T", "TRUE", "true", "True", ...); `fallback` when
// absent or empty (a bare "?purge" counts as true).
bool QueryBool(const Request& req, const std::string& key, bool fallback);

// Maps a Status to Nomad's HTTP error: NotFound → 404, InvalidArgument → 400 (unless
// `invalid_is_500`, for job validation), PermissionDenied → 403, else 500.
Response ErrorResponse(const absl::Status& status, bool invalid_is_500 = false);

}  // namespace drover::api
