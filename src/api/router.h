// Maps (method, path) to handlers. Patterns are '/'-separated segments where
// ":name" captures one segment. A path that matches a route with another method gets
// 405 "Invalid method"; no match at all gets 404. PUT and POST are interchangeable for
// writes, as in Nomad.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/http_types.h"
#include "common/asio.h"

namespace drover::api {

using Handler = std::function<asio::awaitable<Response>(Request&)>;

class Router {
 public:
  // `methods` e.g. {"GET"} or {"PUT", "POST"}.
  void Add(std::set<std::string> methods, const std::string& pattern, Handler handler);
  // A check every request passes before it is routed; an answer from it is sent instead.
  using Check = std::function<std::optional<Response>(const Request&)>;
  void AddCheck(Check check) { checks_.push_back(std::move(check)); }
  // Answers requests whose path matches no route (instead of 404): a client-only agent
  // forwards them to its servers.
  void SetFallback(Handler handler) { fallback_ = std::move(handler); }
  // Replaces the handler of every route added so far whose pattern starts with
  // `prefix` by `wrap(handler)`.
  void WrapRoutes(const std::string& prefix, const std::function<Handler(Handler)>& wrap);
  asio::awaitable<Response> Dispatch(Request& req) const;

 private:
  struct Route {
    std::string pattern;
    std::set<std::string> methods;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
  std::vector<Check> checks_;
  Handler fallback_;
};

}  // namespace drover::api
