// HTTP request/response as the API handlers see them: plain values, no Beast types
// (only http_server.cc knows Beast).
#pragma once

#include <map>
#include <string>

namespace drover::api {

struct Request {
  std::string method;                          // "GET", "PUT", ...
  std::string path;                            // decoded path without the query
  std::map<std::string, std::string> query;    // last value wins
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::map<std::string, std::string> params;  // ":name" captures from the route

  // Query parameter or "" when absent.
  std::string Query(const std::string& key) const {
    auto it = query.find(key);
    return it == query.end() ? "" : it->second;
  }
  bool HasQuery(const std::string& key) const { return query.contains(key); }
  const std::string& Param(const std::string& key) const { return params.at(key); }
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  std::string body;

  // Nomad's errors: plain text, the message only.
  static Response Error(int status, std::string message) {
    Response r;
    r.status = status;
    r.content_type = "text/plain; charset=utf-8";
    r.body = std::move(message);
    return r;
  }
};

}  // namespace drover::api
