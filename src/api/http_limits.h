// What one HTTP client may make the agent hold or wait for (docs/security.md lists every
// limit with its default and its agent configuration key, in the `limits` block).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace drover::api {

struct HttpLimits {
  // Open connections, from all clients together and from one IP address (Nomad's
  // limits.http_max_conns_per_client). A connection over either gets a 429 and is closed.
  size_t max_conns = 1024;
  size_t max_conns_per_client = 100;
  // Request line and headers together; one request's body; the bodies of all requests
  // being read or handled at once (a request that would pass it gets a 503 before its
  // body is read).
  size_t max_header_bytes = 64 << 10;
  size_t max_body_bytes = 16 << 20;
  size_t max_inflight_body_bytes = 128 << 20;
  // Streamed responses (logs and files followed, snapshots) open at once.
  size_t max_streams = 256;
  // An idle keep-alive connection, or a request's headers, may take idle_timeout; its
  // body read_timeout; every write of the response (each chunk of a stream)
  // write_timeout, so a client that stops reading is dropped.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds read_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(60)};
};

// Which browsers may talk to the agent (docs/security.md, "Browsers"). The agent's own
// origin (the Host the request names, when that is an IP address, "localhost", the
// machine's host name or one of `allowed_hosts`) is always allowed; `allowed_origins`
// ("https://ui.example.com") adds others, which also get CORS answers so a UI served
// there works.
struct BrowserPolicy {
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;  // host names, without port
  // Check the Host of every request, not only of those a browser marks as its own: an
  // agent on loopback is a developer's, and a DNS-rebinding page's same-origin GET may
  // carry no Origin and no Sec-Fetch-* header.
  bool check_every_host = false;
};

}  // namespace drover::api
