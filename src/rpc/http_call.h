// One HTTP/1.1 request from the control loop to another agent ("host:port"), as a
// coroutine: a fresh connection, the request, the whole response (or, streamed, its
// body piece by piece), then close. The
// only file that includes Beast on the calling side of agent-to-agent traffic.
//
// What the peer sends is bounded: the response head by HttpCallLimits::max_header_bytes,
// the body by max_body_bytes, the whole call by `timeout`. Cancelling the calling
// coroutine (e.g. with awaitable operators) closes the connection at once.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/chunk_sink.h"
#include "common/clock.h"

namespace drover::rpc {

struct HttpCall {
  std::string method = "GET";
  std::string target;  // origin-form: "/rpc/v1/node/allocations?index=3"
  std::map<std::string, std::string> headers;
  std::string body;  // sent as application/json when not empty, unless headers say
};

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

struct HttpCallLimits {
  size_t max_header_bytes = 64 * 1024;
  size_t max_body_bytes = 256 * 1024 * 1024;
  // Whether "unix:/path" addresses are taken: only for an address the agent's own
  // configuration names (the docker daemon's), never one a peer reported.
  bool allow_unix = false;
};

// `address` is "host:port", or, with limits.allow_unix, "unix:" and a unix socket's path
// ("unix:/run/docker.sock"; the Host header is then "localhost").
// Unavailable when the peer cannot be reached or the exchange breaks off (naming the
// address), DeadlineExceeded when `timeout` passes, ResourceExhausted when the answer
// passes a limit, Cancelled when the caller was cancelled. Any HTTP status is a reply.
asio::awaitable<absl::StatusOr<HttpReply>> SendHttp(std::string address, HttpCall call,
                                                    common::Duration timeout,
                                                    HttpCallLimits limits = {});

// An answer read as it arrives, piece by piece: a relayed stream (followed logs), or a
// large archive. `idle_timeout` bounds each wait for the peer (connecting, the head,
// each piece), not the whole answer nor the caller's work between pieces. Cancelling the coroutine
// that waits in Open or Next closes the connection.
class HttpStream {
 public:
  // Sends the call and reads the answer's head (status and headers; the body empty).
  static asio::awaitable<absl::StatusOr<std::unique_ptr<HttpStream>>> Open(
      std::string address, HttpCall call, common::Duration idle_timeout,
      HttpCallLimits limits = {});
  ~HttpStream();
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  const HttpReply& head() const;
  // For the body from now on (Open's applied to connecting and the head).
  void set_idle_timeout(common::Duration idle);
  // The next piece of the body (up to 64 KiB), "" once it has ended. Errors as SendHttp's;
  // ResourceExhausted past max_body_bytes in all.
  asio::awaitable<absl::StatusOr<std::string>> Next();

 private:
  struct Impl;
  explicit HttpStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A 200 answer's body goes to `sink` piece by piece (never held whole; the reply's body
// stays empty). Any other status keeps up to 64 KiB of its body in the reply, for the
// error. `idle_timeout` as HttpStream's.
asio::awaitable<absl::StatusOr<HttpReply>> SendHttpStreaming(std::string address, HttpCall call,
                                                             common::Duration idle_timeout,
                                                             HttpCallLimits limits,
                                                             common::ChunkSink& sink);

}  // namespace drover::rpc
