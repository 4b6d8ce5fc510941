#include "api/router.h"

#include <sstream>

namespace drover::api {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  std::string seg;
  std::stringstream ss(path);
  while (std::getline(ss, seg, '/')) {
    if (!seg.empty())
      out.push_back(seg);
  }
  return out;
}

}  // namespace

void Router::Add(std::set<std::string> methods, const std::string& pattern, Handler handler) {
  routes_.push_back(Route{std::move(methods), Split(pattern), std::move(handler)});
}

asio::awaitable<Response> Router::Dispatch(Request& req) const {
  const std::vector<std::string> parts = Split(req.path);
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
  co_return Response::Error(404, "Invalid URL");
}

}  // namespace drover::api
