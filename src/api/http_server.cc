#include "api/http_server.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <set>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "common/logging.h"
#include "common/offload.h"

namespace drover::api {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Asio does not open sockets with close-on-exec; task processes must not inherit them.
void SetCloseOnExec(int fd) {
  const int flags = fcntl(fd, F_GETFD);
  if (flags >= 0)
    fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Chunks onto the connection; remembers a failed write so the producer stops.
class ChunkWriter final : public StreamWriter {
 public:
  explicit ChunkWriter(beast::tcp_stream& stream) : stream_(stream) {}
  asio::awaitable<bool> Write(std::string data) override {
    if (failed_)
      co_return false;
    if (data.empty())
      co_return true;
    auto chunk = http::make_chunk(asio::buffer(data));
    auto [ec, n] = co_await asio::async_write(stream_, chunk, asio::as_tuple(asio::use_awaitable));
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
  bool failed_ = false;
};

}  // namespace

struct HttpServer::Impl {
  Impl(asio::any_io_executor ex, const Router& r) : executor(ex), router(r), acceptor(ex) {}

  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(std::shared_ptr<beast::tcp_stream> stream);
  static Request ToRequest(const http::request<http::string_body>& in);

  asio::any_io_executor executor;
  const Router& router;
  tcp::acceptor acceptor;
  bool stopped = false;
  std::set<std::shared_ptr<beast::tcp_stream>> sessions;
};

HttpServer::HttpServer(asio::any_io_executor executor, const Router& router)
    : impl_(std::make_unique<Impl>(executor, router)) {}

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
  SetCloseOnExec(impl_->acceptor.native_handle());
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
  while (!stopped) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec) {
      if (stopped || ec == asio::error::operation_aborted)
        break;
      DROVER_LOG_WARN("http: accept failed: {}", ec.message());
      continue;
    }
    SetCloseOnExec(socket.native_handle());
    auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
    sessions.insert(stream);
    common::SpawnDetached(executor, Session(stream), "http session");
  }
}

Request HttpServer::Impl::ToRequest(const http::request<http::string_body>& in) {
  Request req;
  req.method = std::string(in.method_string());
  req.body = in.body();
  for (const auto& field : in) {
    std::string name(field.name_string());
    for (char& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers[name] = std::string(field.value());
  }
  const std::string target(in.target());
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) {
    req.path = target;
    return req;
  }
  req.path = std::string(parsed->path());
  for (const auto& param : parsed->params()) {
    req.query[std::string(param.key)] = param.has_value ? std::string(param.value) : "";
  }
  return req;
}

asio::awaitable<void> HttpServer::Impl::Session(std::shared_ptr<beast::tcp_stream> stream) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    stream->expires_after(std::chrono::minutes(10));
    auto [hec, hn] = co_await http::async_read_header(*stream, buffer, parser,
                                                      asio::as_tuple(asio::use_awaitable));
    boost::system::error_code ec = hec;
    if (!ec && beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      // curl and others wait for this before sending a body.
      http::response<http::empty_body> cont{http::status::continue_, parser.get().version()};
      auto [cec, cn] =
          co_await http::async_write(*stream, cont, asio::as_tuple(asio::use_awaitable));
      ec = cec;
    }
    if (!ec) {
      auto [bec, bn] =
          co_await http::async_read(*stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
      ec = bec;
    }
    if (ec) {
      const bool closed = ec == http::error::end_of_stream || ec == asio::error::eof ||
                          ec == asio::error::operation_aborted ||
                          ec == asio::error::connection_reset || ec == beast::error::timeout;
      if (!closed) {
        const bool too_large = ec == http::error::body_limit;
        http::response<http::string_body> res{
            too_large ? http::status::payload_too_large : http::status::bad_request, 11};
        res.set(http::field::content_type, "text/plain; charset=utf-8");
        res.body() =
            too_large ? "Request body too large" : "Malformed HTTP request: " + ec.message();
        res.keep_alive(false);
        res.prepare_payload();
        co_await http::async_write(*stream, res, asio::as_tuple(asio::use_awaitable));
      }
      break;
    }
    http::request<http::string_body> in = parser.release();
    Request req = ToRequest(in);
    Response out;
    try {
      out = co_await router.Dispatch(req);
    } catch (const std::exception& e) {
      DROVER_LOG_ERROR("http: {} {} failed: {}", req.method, req.path, e.what());
      out = Response::Error(500, e.what());
    }
    if (out.stream) {
      // Headers now, then chunks as the producer writes them.
      http::response<http::empty_body> head{static_cast<http::status>(out.status), in.version()};
      head.set(http::field::server, "drover");
      head.set(http::field::content_type, out.content_type);
      for (const auto& [k, v] : out.headers)
        head.set(k, v);
      head.chunked(true);
      head.keep_alive(in.keep_alive());
      stream->expires_never();
      http::response_serializer<http::empty_body> serializer{head};
      auto [hwec, hn] = co_await http::async_write_header(*stream, serializer,
                                                          asio::as_tuple(asio::use_awaitable));
      if (hwec)
        break;
      ChunkWriter writer(*stream);
      try {
        co_await out.stream(writer);
      } catch (const std::exception& e) {
        DROVER_LOG_ERROR("http: streaming {} {} failed: {}", req.method, req.path, e.what());
        break;  // mid-body: the only honest end is closing the connection
      }
      if (writer.failed())
        break;
      auto last = http::make_chunk_last();
      auto [lec, ln] =
          co_await asio::async_write(*stream, last, asio::as_tuple(asio::use_awaitable));
      if (lec || !head.keep_alive())
        break;
      continue;
    }
    http::response<http::string_body> res{static_cast<http::status>(out.status), in.version()};
    res.set(http::field::server, "drover");
    res.set(http::field::content_type, out.content_type);
    for (const auto& [k, v] : out.headers)
      res.set(k, v);
    res.body() = std::move(out.body);
    res.keep_alive(in.keep_alive());
    res.prepare_payload();
    stream->expires_never();
    auto [wec, written] =
        co_await http::async_write(*stream, res, asio::as_tuple(asio::use_awaitable));
    if (wec || !res.keep_alive())
      break;
  }
  boost::system::error_code ignored;
  stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
  sessions.erase(stream);
}

}  // namespace drover::api
