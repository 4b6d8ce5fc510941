// A small synchronous HTTP/1.1 client for the agent's Nomad-compatible API. The CLI is
// a thin client: every command is a handful of these calls. `HttpClient` is the seam
// (commands take it by reference, tests pass a fake); `NewHttpClient` makes the real
// one, built on Boost.Beast (kept out of this header).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cli/url.h"

#include "codec/json.h"

namespace drover::cli {

struct HttpResponse {
  int status = 0;
  std::string body;
  // Header names in lower case.
  std::map<std::string, std::string> headers;
  // X-Nomad-Index, 0 when absent or malformed.
  uint64_t index = 0;
};

inline constexpr std::chrono::milliseconds kDefaultRequestTimeout{60'000};

// Thread-safety: implementations need not be thread-safe.
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  HttpClient() = default;
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `method` (GET, PUT, POST, DELETE) to `path_with_query` ("/v1/jobs?prefix=x")
  // with `body` (sent as application/json when not empty) and waits at most `timeout`.
  // OK only for HTTP 200. Any other status gives the Go api's error text
  // "Unexpected response code: <code> (<body>)" with a matching code (404 NotFound,
  // 400 InvalidArgument, 403 PermissionDenied, 405 Unimplemented, other Internal).
  // Transport failures give Unavailable (DeadlineExceeded on timeout) phrased as Go's
  // net/http: `Get "http://127.0.0.1:4646/v1/jobs": dial tcp 127.0.0.1:4646: connect:
  // connection refused`.
  virtual absl::StatusOr<HttpResponse> Do(
      std::string_view method, std::string_view path_with_query, std::string_view body = {},
      std::chrono::milliseconds timeout = kDefaultRequestTimeout) = 0;

  // GET whose body arrives over time (a followed log): `on_data` gets each piece as it
  // comes and returns false to stop reading. OK once the body ended (or was stopped);
  // errors as Do's (the timeout applies until the headers are in). The default reads
  // the whole body with Do and hands it over at once (enough for fakes).
  virtual absl::Status Stream(std::string_view path_with_query,
                              const std::function<bool(std::string_view)>& on_data);
};

// The real client. `token`, when not empty, is sent as X-Nomad-Token.
std::unique_ptr<HttpClient> NewHttpClient(Address address, std::string token = "");

// GET `path` and parse the body as JSON (InvalidArgument when it is not JSON).
absl::StatusOr<codec::Json> GetJson(HttpClient& client, std::string_view path);

// The HTTP status → absl code mapping used by Do (exposed for fakes).
absl::StatusCode StatusCodeForHttp(int http_status);
// Do's error for a non-200 response.
absl::Status UnexpectedResponse(int http_status, std::string_view body);

}  // namespace drover::cli
