// For tests of handlers: requests built from a target, dispatched through a router with
// no socket, and streamed bodies collected.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/http_types.h"
#include "api/router.h"
#include "testing/test_util.h"

namespace drover::api::test {

// `target` is a path with an optional query ("/v1/jobs?prefix=a&pretty").
inline Request MakeRequest(std::string method, const std::string& target, std::string body = "",
                           std::map<std::string, std::string> headers = {}) {
  Request req;
  req.method = std::move(method);
  const size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) {
    const std::string rest = target.substr(q + 1);
    size_t pos = 0;
    while (pos <= rest.size()) {
      const size_t amp = rest.find('&', pos);
      const std::string kv = rest.substr(pos, amp == std::string::npos ? amp : amp - pos);
      const size_t eq = kv.find('=');
      req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
      if (amp == std::string::npos)
        break;
      pos = amp + 1;
    }
  }
  req.body = std::move(body);
  req.headers = std::move(headers);
  return req;
}

// Runs the router on `io` until the handler answers.
inline Response Dispatch(asio::io_context& io, const Router& router, Request req) {
  std::optional<Response> out;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out = co_await router.Dispatch(req); }, asio::detached);
  EXPECT_TRUE(drover::testing::RunUntil(io, [&] { return out.has_value(); }));
  return out ? *std::move(out) : Response::Error(599, "no answer");
}

class RecordingWriter final : public StreamWriter {
 public:
  asio::awaitable<bool> Write(std::string data) override {
    chunks.push_back(std::move(data));
    co_return !gone;
  }
  bool ClientGone() override { return gone; }
  std::vector<std::string> chunks;
  bool gone = false;
};

// The whole body of a response: its stream run to the end, or its body.
inline std::string Drain(asio::io_context& io, const Response& r) {
  if (!r.stream)
    return r.body;
  RecordingWriter writer;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await r.stream(writer);
        done = true;
      },
      asio::detached);
  EXPECT_TRUE(drover::testing::RunUntil(io, [&] { return done; }));
  std::string out;
  for (const std::string& c : writer.chunks)
    out += c;
  return out;
}

}  // namespace drover::api::test
