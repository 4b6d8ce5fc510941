// The browser checks every request passes before it is routed (docs/security.md):
//
//   - A request that comes from a browser (it carries Origin or a Sec-Fetch-* header)
//     must name the agent in its Host header by IP address, "localhost" or a configured
//     host name: a page on a DNS-rebinding name (attacker.example resolving to
//     127.0.0.1) is refused, even for same-origin reads of logs or files.
//   - Its Origin, when present, must be the agent's own (scheme://Host) or a configured
//     allowed origin: another site cannot write to the agent or read what it serves.
//   - A write (anything but GET and HEAD) whose Content-Type is one a page may send
//     cross-site without asking first (text/plain, application/x-www-form-urlencoded,
//     multipart/form-data) is refused unless it carries an X-Nomad-Token header, which
//     a page cannot add without the CORS preflight this agent only answers for allowed
//     origins. JSON, or no Content-Type at all (Nomad's Go API client sends none), pass.
#pragma once

#include <map>
#include <string>

#include "absl/status/status.h"

#include "api/http_limits.h"
#include "api/http_types.h"

namespace drover::api {

// OK, or PermissionDenied (403) / InvalidArgument (415 for the content type) saying why.
absl::Status CheckBrowserRequest(const Request& req, const BrowserPolicy& policy);

// The CORS headers for a request from an allowed other origin (empty for any other
// request), and whether `req` is a CORS preflight (OPTIONS with
// Access-Control-Request-Method) that these headers answer.
std::map<std::string, std::string> CorsHeaders(const Request& req, const BrowserPolicy& policy);
bool IsPreflight(const Request& req);

}  // namespace drover::api
