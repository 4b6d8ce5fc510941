// HTTP request/response as the API handlers see them: plain values, no Beast types
// (only http_server.cc knows Beast).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/asio.h"

namespace drover::api {

struct Request {
  std::string method;                        // "GET", "PUT", ...
  std::string path;                          // decoded path without the query
  std::string raw_path;                      // as sent (percent-encoded); routing splits it
  std::map<std::string, std::string> query;  // last value wins
  // Every parameter in order, repeated ones included (?topic=a&topic=b).
  std::vector<std::pair<std::string, std::string>> query_list;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::map<std::string, std::string> params;  // ":name" captures from the route
  std::string peer_ip;  // the connection's remote address (IPv4, or IPv6 without brackets)

  // Query parameter or "" when absent.
  std::string Query(const std::string& key) const {
    auto it = query.find(key);
    return it == query.end() ? "" : it->second;
  }
  bool HasQuery(const std::string& key) const { return query.contains(key); }
  // Header `name` (lower case) or "" when absent.
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  const std::string& Param(const std::string& key) const { return params.at(key); }
};

// Where a streamed response body goes (chunked transfer encoding).
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  // Sends `data` as one chunk (nothing for empty data). False once the client is gone:
  // the producer should stop.
  virtual asio::awaitable<bool> Write(std::string data) = 0;
  // Whether the client has closed its side (checked without blocking), so a producer
  // with nothing to send notices too.
  virtual bool ClientGone() = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  std::string body;
  // When set, the body is produced over time: the server sends the headers, then calls
  // `stream`, which writes chunks until it returns (and `body` is ignored).
  std::function<asio::awaitable<void>(StreamWriter&)> stream;

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
