#include "api/browser_policy.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"

namespace drover::api {

namespace {

std::string Header(const Request& req, const std::string& name) {
  auto it = req.headers.find(name);
  return it == req.headers.end() ? "" : it->second;
}

// "host:port" -> "host", "[::1]:port" -> "::1".
std::string HostOnly(const std::string& host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  const size_t colon = host.find(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

// The machine's own host name, which tools may use to reach the agent.
const std::string& OwnHostName() {
  static const std::string name = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0)
      return std::string();
    return absl::AsciiStrToLower(buf);
  }();
  return name;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

bool HostAllowed(const std::string& host_header, const BrowserPolicy& policy) {
  const std::string host = absl::AsciiStrToLower(HostOnly(host_header));
  if (host.empty())
    return false;
  if (host == "localhost" || IsIpLiteral(host) || host == OwnHostName())
    return true;
  return std::any_of(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                     [&](const std::string& h) { return absl::AsciiStrToLower(h) == host; });
}

bool FromBrowser(const Request& req) {
  if (req.headers.contains("origin"))
    return true;
  return std::any_of(req.headers.begin(), req.headers.end(),
                     [](const auto& h) { return h.first.starts_with("sec-fetch-"); });
}

std::string Normalize(std::string origin) {
  origin = absl::AsciiStrToLower(origin);
  while (!origin.empty() && origin.back() == '/')
    origin.pop_back();
  return origin;
}

bool OriginConfigured(const std::string& origin, const BrowserPolicy& policy) {
  const std::string o = Normalize(origin);
  return std::any_of(policy.allowed_origins.begin(), policy.allowed_origins.end(),
                     [&](const std::string& a) { return Normalize(a) == o; });
}

bool SameOrigin(const std::string& origin, const std::string& host) {
  const std::string o = Normalize(origin);
  const std::string h = absl::AsciiStrToLower(host);
  return o == "http://" + h || o == "https://" + h;
}

bool IsRead(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

}  // namespace

absl::Status CheckBrowserRequest(const Request& req, const BrowserPolicy& policy) {
  if (FromBrowser(req) || policy.check_every_host) {
    const std::string host = Header(req, "host");
    if (!HostAllowed(host, policy)) {
      return absl::PermissionDeniedError(
          "refusing a request for Host \"" + host.substr(0, 256) +
          "\": not an address of this agent (a DNS-rebinding page?). Use the agent's IP "
          "address, or add the name to http.allowed_hosts in the agent configuration");
    }
    const std::string origin = Header(req, "origin");
    if (req.headers.contains("origin") &&
        (origin == "null" || origin.empty() ||
         (!SameOrigin(origin, host) && !OriginConfigured(origin, policy)))) {
      return absl::PermissionDeniedError(
          "refusing a cross-origin request from \"" + origin.substr(0, 256) +
          "\". Add the origin to http.allowed_origins in the agent configuration to allow it");
    }
  }
  if (!IsRead(req.method) && !req.headers.contains("x-nomad-token")) {
    std::string type = absl::AsciiStrToLower(Header(req, "content-type"));
    type = type.substr(0, type.find(';'));
    while (!type.empty() && (type.back() == ' ' || type.back() == '\t'))
      type.pop_back();
    if (type == "text/plain" || type == "application/x-www-form-urlencoded" ||
        type == "multipart/form-data") {
      return absl::InvalidArgumentError(
          "refusing a write with Content-Type \"" + type +
          "\", which any web page can send from another site: send Content-Type: "
          "application/json (curl -H 'Content-Type: application/json' ...)");
    }
  }
  return absl::OkStatus();
}

std::map<std::string, std::string> CorsHeaders(const Request& req, const BrowserPolicy& policy) {
  const std::string origin = Header(req, "origin");
  if (origin.empty() || !OriginConfigured(origin, policy))
    return {};
  std::map<std::string, std::string> h = {
      {"Access-Control-Allow-Origin", origin},
      {"Vary", "Origin"},
      {"Access-Control-Expose-Headers", "X-Nomad-Index, X-Nomad-KnownLeader, X-Nomad-LastContact"}};
  if (IsPreflight(req)) {
    h["Access-Control-Allow-Methods"] = "GET, HEAD, PUT, POST, DELETE";
    h["Access-Control-Allow-Headers"] = "Content-Type, X-Nomad-Token";
    h["Access-Control-Max-Age"] = "600";
  }
  return h;
}

bool IsPreflight(const Request& req) {
  return req.method == "OPTIONS" && req.headers.contains("access-control-request-method");
}

}  // namespace drover::api
