#include "api/router.h"

#include <sstream>

namespace drover::api {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// %XX decoded; anything else (a stray '%') kept as it is.
std::string PercentDecode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The path's segments; with `decode`, each is percent-decoded after the split, so an
// encoded '/' ("%2F") stays inside its segment (a job ID "a/b" is "/v1/job/a%2Fb").
std::vector<std::string> Split(const std::string& path, bool decode) {
  std::vector<std::string> out;
  std::string seg;
  std::stringstream ss(path);
  while (std::getline(ss, seg, '/')) {
    if (!seg.empty())
      out.push_back(decode ? PercentDecode(seg) : seg);
  }
  return out;
}

}  // namespace

void Router::Add(std::set<std::string> methods, const std::string& pattern, Handler handler) {
  routes_.push_back(Route{pattern, std::move(methods), Split(pattern, false), std::move(handler)});
}

void Router::WrapRoutes(const std::string& prefix, const std::function<Handler(Handler)>& wrap) {
  for (Route& r : routes_) {
    if (r.pattern.starts_with(prefix))
      r.handler = wrap(std::move(r.handler));
  }
}

asio::awaitable<Response> Router::Dispatch(Request& req) const {
  for (const Check& check : checks_) {
    if (std::optional<Response> refused = check(req))
      co_return *std::move(refused);
  }
  const std::vector<std::string> parts =
      req.raw_path.empty() ? Split(req.path, false) : Split(req.raw_path, true);
  bool path_matched = false;
  for (const Route& r : routes_) {
    if (r.segments.size() != parts.size())
      continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    for (size_t i = 0; i < parts.size() && ok; ++i) {
      if (!r.segments[i].empty() && r.segments[i][0] == ':') {
        params[r.segments[i].substr(1)] = parts[i];
      } else {
        ok = r.segments[i] == parts[i];
      }
    }
    if (!ok)
      continue;
    path_matched = true;
    if (!r.methods.contains(req.method))
      continue;
    req.params = std::move(params);
    co_return co_await r.handler(req);
  }
  if (path_matched) {
    co_return Response::Error(405, "Invalid method");
  }
  if (fallback_)
    co_return co_await fallback_(req);
  co_return Response::Error(404, "Invalid URL");
}

}  // namespace drover::api
