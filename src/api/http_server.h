// HTTP/1.1 server on Boost.Beast, running on the control loop: one coroutine per
// connection, keep-alive, requests dispatched through a Router. The only file that
// includes Beast on the serving side. Every connection is bounded as HttpLimits says
// (count, per-client count, header and body sizes, bodies in flight, streams, idle,
// read and write timeouts), accepting backs off instead of spinning when descriptors
// run out, and every request passes the browser checks (browser_policy.h) before it is
// routed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "api/http_limits.h"
#include "api/router.h"
#include "common/asio.h"

namespace drover::metrics {
class Registry;
}  // namespace drover::metrics

namespace drover::api {

class HttpServer {
 public:
  // `router` must outlive the server.
  HttpServer(asio::any_io_executor executor, const Router& router, HttpLimits limits = {},
             BrowserPolicy browser = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; port 0 picks a free port. Returns the bound port.
  // Unavailable "failed to bind 127.0.0.1:4646: Address already in use" on conflict.
  absl::StatusOr<uint16_t> Listen(const std::string& address, uint16_t port);
  // Starts accepting. REQUIRES: Listen() succeeded.
  void Start();
  // Stops accepting and closes every open connection.
  void Stop();

  // Counts requests (drover.http.requests by method and code, and their time in
  // drover.http.request_seconds) and refusals by the limit that refused them
  // (drover.http.rejected), labelled listener=`listener`. Call before Start.
  void set_metrics(metrics::Registry* registry, std::string listener);
  size_t open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace drover::api
