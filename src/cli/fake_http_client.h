// A scripted HttpClient for tests: canned responses keyed by "METHOD path", a record of
// the requests made. Unknown routes answer 404 like the agent.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "cli/http_client.h"

namespace drover::cli {

class FakeHttpClient final : public HttpClient {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::string body;
  };

  // Adds a response for `method path`. Several responses for one route are served in
  // order, the last one repeating.
  void Add(const std::string& method, const std::string& path, int status, std::string body,
           uint64_t index = 1) {
    routes_[method + " " + path].push_back(HttpResponse{status, std::move(body), {}, index});
  }
  void AddJson(const std::string& method, const std::string& path, const std::string& body,
               uint64_t index = 1) {
    Add(method, path, 200, body, index);
  }

  const std::vector<Request>& requests() const { return requests_; }

  // cli::HttpClient
  absl::StatusOr<HttpResponse> Do(std::string_view method, std::string_view path_with_query,
                                  std::string_view body,
                                  std::chrono::milliseconds /*timeout*/) override {
    requests_.push_back(
        Request{std::string(method), std::string(path_with_query), std::string(body)});
    auto it = routes_.find(std::string(method) + " " + std::string(path_with_query));
    if (it == routes_.end()) {
      return UnexpectedResponse(404, "not found");
    }
    HttpResponse response = it->second.front();
    if (it->second.size() > 1) {
      it->second.pop_front();
    }
    if (response.status != 200) {
      return UnexpectedResponse(response.status, response.body);
    }
    return response;
  }

 private:
  std::map<std::string, std::deque<HttpResponse>> routes_;
  std::vector<Request> requests_;
};

}  // namespace drover::cli
