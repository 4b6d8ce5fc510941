#include "api/http_server.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <array>
#include <map>
#include <optional>
#include <set>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "api/browser_policy.h"
#include "api/request_decode.h"
#include "common/fds.h"
#include "common/logging.h"
#include "common/offload.h"
#include "metrics/registry.h"

namespace drover::api {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

namespace {

// Chunks onto the connection, each write bounded by the write timeout; remembers a
// failed write so the producer stops.
class ChunkWriter final : public StreamWriter {
 public:
  ChunkWriter(beast::tcp_stream& stream, std::chrono::milliseconds timeout)
      : stream_(stream), timeout_(timeout) {}
  asio::awaitable<bool> Write(std::string data) override {
    if (failed_)
      co_return false;
    if (data.empty())
      co_return true;
    auto chunk = http::make_chunk(asio::buffer(data));
    stream_.expires_after(timeout_);
    auto [ec, n] = co_await asio::async_write(stream_, chunk, asio::as_tuple(asio::use_awaitable));
    stream_.expires_never();
    failed_ = static_cast<bool>(ec);
    co_return !failed_;
  }
  bool failed() const { return failed_; }
  bool ClientGone() override {
    char byte;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    // 0: the client closed; an error other than "nothing there yet": the connection is
    // broken. (Bytes waiting are a next request: the client is still there.)
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

 private:
  beast::tcp_stream& stream_;
  std::chrono::milliseconds timeout_;
  bool failed_ = false;
};

http::response<http::string_body> PlainResponse(http::status status, std::string body,
                                                unsigned version, bool keep_alive) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "drover");
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

// Who a connection counts against: its IPv4 address, or its IPv6 /64 (one host gets a
// whole /64, so counting single IPv6 addresses would give it any number of "clients").
std::string ClientKey(const asio::ip::address& a) {
  if (a.is_v6() && !a.to_v6().is_v4_mapped()) {
    asio::ip::address_v6::bytes_type b = a.to_v6().to_bytes();
    std::fill(b.begin() + 8, b.end(), 0);
    return asio::ip::address_v6(b).to_string() + "/64";
  }
  return a.is_v6() ? asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).to_string()
                   : a.to_string();
}

bool OutOfDescriptors(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec.value() == ENFILE ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

}  // namespace

struct HttpServer::Impl {
  Impl(asio::any_io_executor ex, const Router& r, HttpLimits l, BrowserPolicy b)
      : executor(ex), router(r), limits(l), browser(std::move(b)), acceptor(ex) {}

  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(std::shared_ptr<beast::tcp_stream> stream, std::string client,
                                std::string peer_ip);
  asio::awaitable<void> Refuse(tcp::socket socket);
  // Reads one request. False when the connection is done (closed, timed out, refused).
  asio::awaitable<bool> ReadRequest(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    http::request<http::string_body>& in, size_t& reserved);
  asio::awaitable<Response> Handle(Request& req);
  // After refusing a request whose body is still coming: stops sending, then reads and
  // drops what the client sends for a moment, so the refusal reaches it instead of
  // being lost to a reset.
  static asio::awaitable<void> Linger(beast::tcp_stream& stream);
  asio::awaitable<bool> WriteStreamed(beast::tcp_stream& stream, Response& out,
                                      const http::request<http::string_body>& in,
                                      const Request& req);
  static Request ToRequest(http::request<http::string_body>& in);

  asio::any_io_executor executor;
  const Router& router;
  const HttpLimits limits;
  const BrowserPolicy browser;
  tcp::acceptor acceptor;
  bool stopped = false;
  std::set<std::shared_ptr<beast::tcp_stream>> sessions;
  std::map<std::string, size_t> per_client;  // open connections by client address
  size_t refusing = 0;                       // connections being answered 429
  size_t inflight_body_bytes = 0;
  size_t streams = 0;
  metrics::Registry* metrics = nullptr;
  std::string listener;

  void Rejected(const char* limit) {
    if (metrics != nullptr)
      metrics->IncrCounter("drover.http.rejected", 1, {{"listener", listener}, {"limit", limit}});
  }
};

void HttpServer::set_metrics(metrics::Registry* registry, std::string listener) {
  impl_->metrics = registry;
  impl_->listener = std::move(listener);
}

size_t HttpServer::open_connections() const {
  return impl_->sessions.size();
}

HttpServer::HttpServer(asio::any_io_executor executor, const Router& router, HttpLimits limits,
                       BrowserPolicy browser)
    : impl_(std::make_unique<Impl>(executor, router, limits, std::move(browser))) {}

HttpServer::~HttpServer() {
  Stop();
}

absl::StatusOr<uint16_t> HttpServer::Listen(const std::string& address, uint16_t port) {
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (ec) {
    return absl::InvalidArgumentError("invalid bind address '" + address + "': " + ec.message());
  }
  const tcp::endpoint ep(ip, port);
  const std::string where = address + ":" + std::to_string(port);
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec)
    impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    impl_->acceptor.bind(ep, ec);
  if (!ec)
    impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    impl_->acceptor.close();
    return absl::UnavailableError("failed to bind " + where + ": " + ec.message());
  }
  common::SetCloseOnExec(impl_->acceptor.native_handle());
  return impl_->acceptor.local_endpoint().port();
}

void HttpServer::Start() {
  common::SpawnDetached(impl_->executor, impl_->AcceptLoop(), "http accept loop");
}

void HttpServer::Stop() {
  if (impl_->stopped)
    return;
  impl_->stopped = true;
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
  for (const auto& s : impl_->sessions) {
    s->socket().close(ec);
  }
  impl_->sessions.clear();
}

asio::awaitable<void> HttpServer::Impl::AcceptLoop() {
  asio::steady_timer backoff_timer(executor);
  std::chrono::milliseconds backoff{0};
  auto last_warning = std::chrono::steady_clock::time_point{};
  size_t suppressed = 0;
  while (!stopped) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (stopped || ec == asio::error::operation_aborted)
        break;
      // Out of descriptors (or memory): the connection waits in the backlog, and
      // retrying at once would spin. Back off, 5 ms doubling up to 1 s, and say so at
      // most every 10 s.
      backoff = OutOfDescriptors(ec) ? std::clamp(backoff * 2, std::chrono::milliseconds(5),
                                                  std::chrono::milliseconds(1000))
                                     : std::chrono::milliseconds(5);
      const auto now = std::chrono::steady_clock::now();
      if (now - last_warning >= 10s) {
        DROVER_LOG_WARN("http: accept failed: {} (backing off; {} more like it not logged)",
                        ec.message(), suppressed);
        last_warning = now;
        suppressed = 0;
      } else {
        ++suppressed;
      }
      backoff_timer.expires_after(backoff);
      co_await backoff_timer.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    backoff = std::chrono::milliseconds(0);
    common::SetCloseOnExec(socket.native_handle());
    boost::system::error_code rec;
    const asio::ip::address peer = socket.remote_endpoint(rec).address();
    const std::string client = ClientKey(peer);
    const std::string peer_ip =
        peer.is_v6() && peer.to_v6().is_v4_mapped()
            ? asio::ip::make_address_v4(asio::ip::v4_mapped, peer.to_v6()).to_string()
            : peer.to_string();
    if (sessions.size() >= limits.max_conns || per_client[client] >= limits.max_conns_per_client) {
      Rejected(sessions.size() >= limits.max_conns ? "max_conns" : "max_conns_per_client");
      if (per_client[client] == 0)
        per_client.erase(client);
      common::SpawnDetached(executor, Refuse(std::move(socket)), "http refuse");
      continue;
    }
    ++per_client[client];
    auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
    sessions.insert(stream);
    common::SpawnDetached(executor, Session(stream, client, peer_ip), "http session");
  }
}

// Over a connection limit: a short 429 when few are being refused already, else just
// close. Never waits long for a client that does not read.
asio::awaitable<void> HttpServer::Impl::Refuse(tcp::socket socket) {
  if (refusing >= 64)
    co_return;  // the socket closes here
  ++refusing;
  beast::tcp_stream stream(std::move(socket));
  stream.expires_after(1s);
  auto res = PlainResponse(http::status::too_many_requests, "Too many open connections", 11,
                           /*keep_alive=*/false);
  co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  --refusing;
}

Request HttpServer::Impl::ToRequest(http::request<http::string_body>& in) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& field : in)
    headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  return DecodeRequest(std::string(in.method_string()), std::string(in.target()), headers,
                       std::move(in.body()));
}

asio::awaitable<bool> HttpServer::Impl::ReadRequest(beast::tcp_stream& stream,
                                                    beast::flat_buffer& buffer,
                                                    http::request<http::string_body>& in,
                                                    size_t& charged) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
  stream.expires_after(limits.idle_timeout);
  auto [hec, hn] =
      co_await http::async_read_header(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
  boost::system::error_code ec = hec;
  const unsigned version = ec ? 11 : parser.get().version();
  std::optional<http::status> refuse;
  std::string why;
  if (!ec) {
    const auto length = parser.content_length();
    const bool has_body = parser.chunked() || (length && *length > 0);
    const auto method = parser.get().method();
    if (length && *length > limits.max_body_bytes) {
      ec = http::error::body_limit;  // refused from its length, before it is read
    } else if (has_body && (method == http::verb::get || method == http::verb::head)) {
      refuse = http::status::bad_request;
      why = "GET and HEAD requests take no body";
    }
  }
  if (!ec && !refuse && beast::iequals(parser.get()[http::field::expect], "100-continue")) {
    // curl and others wait for this before sending a body.
    http::response<http::empty_body> cont{http::status::continue_, version};
    auto [cec, cn] = co_await http::async_write(stream, cont, asio::as_tuple(asio::use_awaitable));
    ec = cec;
  }
  // The body, charged to the budget of all bodies in flight as its bytes arrive: what
  // is held is what was sent, and a request that would pass the budget is turned away.
  stream.expires_after(limits.read_timeout);
  while (!ec && !refuse && !parser.is_done()) {
    auto [bec, bn] =
        co_await http::async_read_some(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    ec = bec;
    const size_t now = parser.get().body().size();
    if (now > charged) {
      if (inflight_body_bytes + (now - charged) > limits.max_inflight_body_bytes) {
        refuse = http::status::service_unavailable;
        why = "Too many request bodies in flight; retry";
        Rejected("inflight_body_bytes");
        break;
      }
      inflight_body_bytes += now - charged;
      charged = now;
    }
  }
  if (refuse) {
    auto res = PlainResponse(*refuse, why, version, false);
    if (*refuse == http::status::service_unavailable)
      res.set(http::field::retry_after, "1");
    stream.expires_after(limits.write_timeout);
    co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    co_await Linger(stream);
    co_return false;
  }
  if (ec) {
    const bool closed = ec == http::error::end_of_stream || ec == asio::error::eof ||
                        ec == asio::error::operation_aborted ||
                        ec == asio::error::connection_reset || ec == beast::error::timeout;
    if (!closed) {
      const bool too_large = ec == http::error::body_limit;
      const bool header_too_large = ec == http::error::header_limit;
      Rejected(too_large ? "max_body_bytes" : header_too_large ? "max_header_bytes" : "malformed");
      auto res = PlainResponse(too_large          ? http::status::payload_too_large
                               : header_too_large ? http::status::request_header_fields_too_large
                                                  : http::status::bad_request,
                               too_large ? "Request body too large (the limit is " +
                                               std::to_string(limits.max_body_bytes) + " bytes)"
                               : header_too_large ? "Request headers too large"
                                                  : "Malformed HTTP request: " + ec.message(),
                               11, false);
      stream.expires_after(limits.write_timeout);
      co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
      co_await Linger(stream);
    }
    co_return false;
  }
  stream.expires_never();
  in = parser.release();
  co_return true;
}

asio::awaitable<void> HttpServer::Impl::Linger(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(2s);
  std::array<char, 16384> sink;
  size_t drained = 0;
  while (drained < (size_t{4} << 20)) {
    auto [ec, n] =
        co_await stream.async_read_some(asio::buffer(sink), asio::as_tuple(asio::use_awaitable));
    if (ec)
      break;
    drained += n;
  }
  stream.expires_never();
}

asio::awaitable<Response> HttpServer::Impl::Handle(Request& req) {
  if (absl::Status s = CheckBrowserRequest(req, browser); !s.ok()) {
    co_return Response::Error(absl::IsPermissionDenied(s) ? 403 : 415, std::string(s.message()));
  }
  std::map<std::string, std::string> cors = CorsHeaders(req, browser);
  Response out;
  if (IsPreflight(req)) {
    out.status = cors.empty() ? 403 : 204;
    out.content_type = "text/plain; charset=utf-8";
  } else {
    try {
      out = co_await router.Dispatch(req);
    } catch (const std::exception& e) {
      DROVER_LOG_ERROR("http: {} {} failed: {}", req.method, req.path, e.what());
      out = Response::Error(500, e.what());
    }
  }
  for (auto& [k, v] : cors)
    out.headers[k] = v;
  co_return out;
}

asio::awaitable<bool> HttpServer::Impl::WriteStreamed(beast::tcp_stream& stream, Response& out,
                                                      const http::request<http::string_body>& in,
                                                      const Request& req) {
  // Headers now, then chunks as the producer writes them.
  http::response<http::empty_body> head{static_cast<http::status>(out.status), in.version()};
  head.set(http::field::server, "drover");
  head.set(http::field::content_type, out.content_type);
  for (const auto& [k, v] : out.headers)
    head.set(k, v);
  head.chunked(true);
  head.keep_alive(in.keep_alive());
  http::response_serializer<http::empty_body> serializer{head};
  stream.expires_after(limits.write_timeout);
  auto [hwec, hn] =
      co_await http::async_write_header(stream, serializer, asio::as_tuple(asio::use_awaitable));
  stream.expires_never();
  if (hwec)
    co_return false;
  ChunkWriter writer(stream, limits.write_timeout);
  bool ok = true;
  try {
    co_await out.stream(writer);
  } catch (const std::exception& e) {
    DROVER_LOG_ERROR("http: streaming {} {} failed: {}", req.method, req.path, e.what());
    ok = false;  // mid-body: the only honest end is closing the connection
  }
  if (!ok || writer.failed())
    co_return false;
  auto last = http::make_chunk_last();
  stream.expires_after(limits.write_timeout);
  auto [lec, ln] = co_await asio::async_write(stream, last, asio::as_tuple(asio::use_awaitable));
  stream.expires_never();
  co_return !lec && head.keep_alive();
}

asio::awaitable<void> HttpServer::Impl::Session(std::shared_ptr<beast::tcp_stream> stream,
                                                std::string client, std::string peer_ip) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> in;
    size_t reserved = 0;
    const bool read = co_await ReadRequest(*stream, buffer, in, reserved);
    if (!read) {
      inflight_body_bytes -= reserved;
      break;
    }
    Response out;
    {
      Request req = ToRequest(in);
      req.peer_ip = peer_ip;
      const auto started = std::chrono::steady_clock::now();
      out = co_await Handle(req);
      if (out.stream && streams >= limits.max_streams) {
        Rejected("max_streams");
        out = Response::Error(503, "Too many streamed responses open; retry");
        out.headers["Retry-After"] = "1";
      }
      if (metrics != nullptr) {
        // Not the request's own string: a client must not mint series.
        const std::string method = in.method() == http::verb::unknown
                                       ? "other"
                                       : std::string(http::to_string(in.method()));
        metrics->IncrCounter(
            "drover.http.requests", 1,
            {{"listener", listener}, {"method", method}, {"code", std::to_string(out.status)}});
        metrics->AddSample(
            "drover.http.request_seconds",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
            {{"listener", listener}, {"method", method}});
      }
      // The body is handled: what it held is released before the answer is sent.
      inflight_body_bytes -= reserved;
      reserved = 0;
      if (out.stream) {
        ++streams;  // counted at once: sessions that checked together cannot all pass
        const bool more = co_await WriteStreamed(*stream, out, in, req);
        --streams;
        if (!more)
          break;
        continue;
      }
    }
    http::response<http::string_body> res{static_cast<http::status>(out.status), in.version()};
    res.set(http::field::server, "drover");
    res.set(http::field::content_type, out.content_type);
    for (const auto& [k, v] : out.headers)
      res.set(k, v);
    res.body() = std::move(out.body);
    res.keep_alive(in.keep_alive());
    res.prepare_payload();
    stream->expires_after(limits.write_timeout);
    auto [wec, written] =
        co_await http::async_write(*stream, res, asio::as_tuple(asio::use_awaitable));
    stream->expires_never();
    if (wec || !res.keep_alive())
      break;
  }
  boost::system::error_code ignored;
  stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream->socket().close(ignored);
  sessions.erase(stream);
  if (auto it = per_client.find(client); it != per_client.end() && --it->second == 0)
    per_client.erase(it);
}

}  // namespace drover::api
