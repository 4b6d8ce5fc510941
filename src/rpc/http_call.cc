#include "rpc/http_call.h"

#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace drover::rpc {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using generic_stream = asio::generic::stream_protocol;

// A peer's address: "unix:" and a socket's path, or host and port.
constexpr std::string_view kUnixPrefix = "unix:";

// What the deadline timer and the caller's cancellation share with the call: either
// closes the socket, which ends whatever operation is pending. Held by shared_ptr as
// their handlers may run after the call has returned.
struct CallState {
  explicit CallState(asio::any_io_executor ex) : socket(ex), resolver(ex), deadline(ex) {}
  generic_stream::socket socket;  // TCP, or a unix socket
  tcp::resolver resolver;
  asio::steady_timer deadline;
  bool timed_out = false;
  bool cancelled = false;
  void Abort() {
    resolver.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
  }
};

// Operations are bound to no cancellation slot: cancellation goes through CallState
// (the coroutine's own slot), whatever Beast's composed operations forward.
auto Op() {
  return asio::bind_cancellation_slot(asio::cancellation_slot(),
                                      asio::as_tuple(asio::use_awaitable));
}

// "host:port" → host, port; IPv6 literals in brackets ("[::1]:4647"). "unix:/path" →
// "unix:", the path.
absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address,
                                                                 bool allow_unix) {
  if (allow_unix && address.starts_with(kUnixPrefix)) {
    std::string path = address.substr(kUnixPrefix.size());
    if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path))
      return absl::InvalidArgumentError("address \"" + address + "\" is not a socket's path");
    return std::make_pair(std::string(kUnixPrefix), std::move(path));
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    return absl::InvalidArgumentError("address \"" + address + "\" has no port");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  uint32_t port = 0;
  if (host.empty() || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port == 0 ||
      port > 65535)
    return absl::InvalidArgumentError("address \"" + address + "\" is not host:port");
  return std::make_pair(host, address.substr(colon + 1));
}

// The request as sent: `call` with the Host, a closed connection after the answer, and a
// JSON body. InvalidArgument for a method HTTP does not know.
absl::StatusOr<http::request<http::string_body>> BuildRequest(const std::string& address,
                                                              HttpCall call, bool unix_socket) {
  http::request<http::string_body> req{http::string_to_verb(call.method), call.target, 11};
  if (req.method() == http::verb::unknown)
    return absl::InvalidArgumentError("unknown HTTP method " + call.method);
  // A unix socket has no host to name (Docker's clients send "docker").
  req.set(http::field::host, unix_socket ? "localhost" : address);
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : call.headers)
    req.set(name, value);
  if (!call.body.empty()) {
    if (req.find(http::field::content_type) == req.end())
      req.set(http::field::content_type, "application/json");
    req.body() = std::move(call.body);
  }
  req.prepare_payload();
  return req;
}

HttpReply ToReply(http::response<http::string_body> res) {
  HttpReply reply;
  reply.status = static_cast<int>(res.result_int());
  for (const auto& field : res)
    reply.headers[absl::AsciiStrToLower(std::string(field.name_string()))] =
        std::string(field.value());
  reply.body = std::move(res.body());
  return reply;
}

// One exchange with a peer: the deadline, the caller's cancellation and the
// connection, shared by the whole-body and the streamed reads. The caller's
// cancellation slot is bound for one coroutine's operations at a time (Bind/Unbind), so a
// stream read from several coroutines in turn never keeps a slot that is gone.
class Exchange {
 public:
  Exchange(std::string address, asio::any_io_executor ex, common::Duration timeout)
      : address_(std::move(address)), state_(std::make_shared<CallState>(ex)) {
    Restart(timeout);
  }
  ~Exchange() {
    Unbind();
    state_->deadline.cancel();
    boost::system::error_code ignored;
    state_->socket.close(ignored);
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // The deadline, from now.
  void Restart(common::Duration timeout) {
    state_->deadline.expires_after(timeout);
    state_->deadline.async_wait(
        [weak = std::weak_ptr<CallState>(state_)](boost::system::error_code ec) {
          if (ec)
            return;
          if (auto s = weak.lock()) {
            s->timed_out = true;
            s->Abort();
          }
        });
  }
  // No deadline while the caller works on what was read.
  void Pause() { state_->deadline.cancel(); }
  void Bind(asio::cancellation_slot slot) { slot_ = slot; }
  void Unbind() {
    if (slot_.is_connected())
      slot_.clear();
    slot_ = asio::cancellation_slot();
  }
  // Asio clears the coroutine's slot each time an operation completes: armed again
  // before each one.
  void Arm() {
    if (slot_.is_connected()) {
      slot_.assign([weak = std::weak_ptr<CallState>(state_)](asio::cancellation_type) {
        if (auto s = weak.lock()) {
          s->cancelled = true;
          s->Abort();
        }
      });
    }
  }
  bool Broken() const { return state_->cancelled || state_->timed_out; }
  absl::Status Failed(std::string_view step, const boost::system::error_code& ec) const {
    if (state_->cancelled)
      return absl::CancelledError("call to " + address_ + " cancelled");
    if (state_->timed_out)
      return absl::DeadlineExceededError(std::string(step) + " " + address_ + ": timed out");
    return absl::UnavailableError(std::string(step) + " " + address_ + ": " + ec.message());
  }
  generic_stream::socket& socket() { return state_->socket; }
  const std::string& address() const { return address_; }

  // Resolves, connects and sends the request.
  asio::awaitable<absl::Status> Send(const std::pair<std::string, std::string>& host_port,
                                     http::request<http::string_body>& req) {
    std::vector<generic_stream::endpoint> endpoints;
    if (host_port.first == kUnixPrefix) {
      endpoints.emplace_back(asio::local::stream_protocol::endpoint(host_port.second));
    } else {
      Arm();
      auto [rec, resolved] =
          co_await state_->resolver.async_resolve(host_port.first, host_port.second, Op());
      if (rec || Broken())
        co_return Failed("resolve", rec);
      for (const auto& entry : resolved)
        endpoints.emplace_back(entry.endpoint());
    }
    Arm();
    auto [cec, endpoint] = co_await asio::async_connect(state_->socket, endpoints, Op());
    if (cec || Broken())
      co_return Failed("dial", cec);
    Arm();
    auto [wec, written] = co_await http::async_write(state_->socket, req, Op());
    if (wec || Broken())
      co_return Failed("write to", wec);
    co_return absl::OkStatus();
  }

 private:
  const std::string address_;
  std::shared_ptr<CallState> state_;
  asio::cancellation_slot slot_;
};

// Binds the calling coroutine's cancellation to an exchange while it is in scope.
class BoundTo {
 public:
  BoundTo(Exchange& x, asio::cancellation_slot slot) : x_(x) { x_.Bind(slot); }
  ~BoundTo() { x_.Unbind(); }
  BoundTo(const BoundTo&) = delete;
  BoundTo& operator=(const BoundTo&) = delete;

 private:
  Exchange& x_;
};

// The head of a reply (status and headers) without its body.
template <typename Body>
void CopyHead(const http::response<Body>& res, HttpReply& reply) {
  reply.status = static_cast<int>(res.result_int());
  for (const auto& field : res)
    reply.headers[absl::AsciiStrToLower(std::string(field.name_string()))] =
        std::string(field.value());
}

// A call checked before anything is sent: where it goes and the request as sent.
struct Prepared {
  std::pair<std::string, std::string> host_port;
  http::request<http::string_body> req;
};
absl::StatusOr<Prepared> Prepare(const std::string& address, HttpCall call, bool allow_unix) {
  auto split = SplitAddress(address, allow_unix);
  if (!split.ok())
    return split.status();
  absl::StatusOr<http::request<http::string_body>> req =
      BuildRequest(address, std::move(call), split->first == kUnixPrefix);
  if (!req.ok())
    return req.status();
  return Prepared{.host_port = *std::move(split), .req = *std::move(req)};
}

// The most of a refusal's body kept when the body was meant for a sink.
constexpr size_t kMaxRefusalBody = 64 * 1024;

}  // namespace

asio::awaitable<absl::StatusOr<HttpReply>> SendHttp(std::string address, HttpCall call,
                                                    common::Duration timeout,
                                                    HttpCallLimits limits) {
  absl::StatusOr<Prepared> p = Prepare(address, std::move(call), limits.allow_unix);
  if (!p.ok())
    co_return p.status();
  asio::cancellation_state cs = co_await asio::this_coro::cancellation_state;
  if (cs.cancelled() != asio::cancellation_type::none)
    co_return absl::CancelledError("call to " + address + " cancelled");
  asio::any_io_executor ex = co_await asio::this_coro::executor;
  Exchange x(address, ex, timeout);
  BoundTo bound(x, cs.slot());
  if (absl::Status sent = co_await x.Send(p->host_port, p->req); !sent.ok())
    co_return sent;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
  x.Arm();
  auto [ec, read] = co_await http::async_read(x.socket(), buffer, parser, Op());
  if (ec == http::error::body_limit || ec == http::error::header_limit)
    co_return absl::ResourceExhaustedError("the answer of " + address + " is too large");
  if (ec || x.Broken())
    co_return x.Failed("read from", ec);
  co_return ToReply(parser.release());
}

struct HttpStream::Impl {
  Impl(std::string address, asio::any_io_executor ex, common::Duration idle)
      : x(std::move(address), ex, idle), idle(idle) {}
  Exchange x;
  common::Duration idle;
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  std::string piece = std::string(64 * 1024, '\0');
  HttpReply head;
};

HttpStream::HttpStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpStream::~HttpStream() = default;

const HttpReply& HttpStream::head() const {
  return impl_->head;
}

void HttpStream::set_idle_timeout(common::Duration idle) {
  impl_->idle = idle;
}

asio::awaitable<absl::StatusOr<std::unique_ptr<HttpStream>>> HttpStream::Open(
    std::string address, HttpCall call, common::Duration idle_timeout, HttpCallLimits limits) {
  absl::StatusOr<Prepared> p = Prepare(address, std::move(call), limits.allow_unix);
  if (!p.ok())
    co_return p.status();
  asio::cancellation_state cs = co_await asio::this_coro::cancellation_state;
  if (cs.cancelled() != asio::cancellation_type::none)
    co_return absl::CancelledError("call to " + address + " cancelled");
  asio::any_io_executor ex = co_await asio::this_coro::executor;
  auto impl = std::make_unique<Impl>(address, ex, idle_timeout);
  Exchange& x = impl->x;
  BoundTo bound(x, cs.slot());
  if (absl::Status sent = co_await x.Send(p->host_port, p->req); !sent.ok())
    co_return sent;
  impl->parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  impl->parser.body_limit(limits.max_body_bytes);
  x.Restart(idle_timeout);
  x.Arm();
  auto [ec, n] = co_await http::async_read_header(x.socket(), impl->buffer, impl->parser, Op());
  if (ec == http::error::header_limit)
    co_return absl::ResourceExhaustedError("the answer of " + address + " is too large");
  x.Pause();
  if (ec || x.Broken())
    co_return x.Failed("read from", ec);
  CopyHead(impl->parser.get(), impl->head);
  co_return std::unique_ptr<HttpStream>(new HttpStream(std::move(impl)));
}

asio::awaitable<absl::StatusOr<std::string>> HttpStream::Next() {
  Impl& s = *impl_;
  asio::cancellation_state cs = co_await asio::this_coro::cancellation_state;
  BoundTo bound(s.x, cs.slot());
  while (!s.parser.is_done()) {
    s.parser.get().body().data = s.piece.data();
    s.parser.get().body().size = s.piece.size();
    s.x.Restart(s.idle);
    s.x.Arm();
    // read_some, not read: read fills the whole piece first, and a followed log may
    // send a line a minute.
    auto [ec, n] = co_await http::async_read_some(s.x.socket(), s.buffer, s.parser, Op());
    s.x.Pause();
    if (ec == http::error::need_buffer)
      ec = {};
    if (ec == http::error::body_limit)
      co_return absl::ResourceExhaustedError("the answer of " + s.x.address() + " is too large");
    if (ec || s.x.Broken())
      co_return s.x.Failed("read from", ec);
    const size_t got = s.piece.size() - s.parser.get().body().size;
    if (got > 0)
      co_return s.piece.substr(0, got);
  }
  co_return std::string();
}

asio::awaitable<absl::StatusOr<HttpReply>> SendHttpStreaming(std::string address, HttpCall call,
                                                             common::Duration idle_timeout,
                                                             HttpCallLimits limits,
                                                             common::ChunkSink& sink) {
  absl::StatusOr<std::unique_ptr<HttpStream>> stream =
      co_await HttpStream::Open(std::move(address), std::move(call), idle_timeout, limits);
  if (!stream.ok())
    co_return stream.status();
  HttpReply reply = (*stream)->head();
  const bool to_sink = reply.status == 200;
  for (;;) {
    absl::StatusOr<std::string> piece = co_await (*stream)->Next();
    if (!piece.ok())
      co_return piece.status();
    if (piece->empty())
      break;
    if (!to_sink) {
      reply.body.append(
          piece->substr(0, kMaxRefusalBody - std::min(kMaxRefusalBody, reply.body.size())));
      if (reply.body.size() >= kMaxRefusalBody)
        break;  // enough to say why; the rest is not read
      continue;
    }
    if (absl::Status s = co_await sink.Write(*std::move(piece)); !s.ok())
      co_return s;
  }
  co_return reply;
}

}  // namespace drover::rpc
