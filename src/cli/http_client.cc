// The Beast implementation of HttpClient: one connection per request, asynchronous
// operations driven to completion on a private io_context so every step honors the
// request timeout (beast::tcp_stream timeouts apply to async operations only).
#include "cli/http_client.h"

#include <array>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace drover::cli {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

// Go's url.Error op: the method with only its first letter upper case ("Get").
std::string GoOp(std::string_view method) {
  std::string op = absl::AsciiStrToLower(std::string(method));
  if (!op.empty()) {
    op[0] = absl::ascii_toupper(op[0]);
  }
  return op;
}

// Go spells errno texts in lower case ("connection refused").
std::string ErrorText(const boost::system::error_code& ec) {
  std::string text = ec.message();
  if (!text.empty()) {
    text[0] = absl::ascii_tolower(text[0]);
  }
  return text;
}

class BeastHttpClient final : public HttpClient {
 public:
  BeastHttpClient(Address address, std::string token)
      : address_(std::move(address)), token_(std::move(token)) {}

  absl::StatusOr<HttpResponse> Do(std::string_view method, std::string_view path_with_query,
                                  std::string_view body,
                                  std::chrono::milliseconds timeout) override {
    try {
      return DoUnchecked(method, path_with_query, body, timeout, nullptr);
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat(GoOp(method), " \"", Url(path_with_query), "\": ", e.what()));
    }
  }

  absl::Status Stream(std::string_view path_with_query,
                      const std::function<bool(std::string_view)>& on_data) override {
    try {
      return DoUnchecked("GET", path_with_query, {}, kDefaultRequestTimeout, &on_data).status();
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("Get \"", Url(path_with_query), "\": ", e.what()));
    }
  }

 private:
  std::string Url(std::string_view path) const {
    return absl::StrCat(address_.ToString(), std::string(path));
  }

  // Runs the io_context until the pending operation completes (or times out).
  static void RunUntilDone(boost::asio::io_context& ioc) {
    ioc.restart();
    ioc.run();
  }

  // With `on_data` the body is handed over piece by piece as it arrives.
  absl::StatusOr<HttpResponse> DoUnchecked(std::string_view method,
                                           std::string_view path_with_query, std::string_view body,
                                           std::chrono::milliseconds timeout,
                                           const std::function<bool(std::string_view)>* on_data) {
    const std::string url = Url(path_with_query);
    auto fail = [&](std::string_view what, absl::StatusCode code) {
      return absl::Status(code, absl::StrCat(GoOp(method), " \"", url, "\": ", std::string(what)));
    };
    auto transport_code = [](const boost::system::error_code& ec) {
      return ec == beast::error::timeout ? absl::StatusCode::kDeadlineExceeded
                                         : absl::StatusCode::kUnavailable;
    };

    const http::verb verb = http::string_to_verb(std::string(method));
    if (verb == http::verb::unknown) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown HTTP method '", std::string(method), "'"));
    }

    boost::asio::io_context ioc;
    boost::system::error_code ec;

    tcp::resolver resolver(ioc);
    tcp::resolver::results_type endpoints =
        resolver.resolve(address_.host, std::to_string(address_.port), ec);
    if (ec) {
      const bool no_host = ec == boost::asio::error::host_not_found ||
                           ec == boost::asio::error::host_not_found_try_again;
      return fail(absl::StrCat("dial tcp: lookup ", address_.host, ": ",
                               no_host ? std::string("no such host") : ErrorText(ec)),
                  absl::StatusCode::kUnavailable);
    }

    beast::tcp_stream stream(ioc);
    stream.expires_after(timeout);
    stream.async_connect(endpoints,
                         [&](const boost::system::error_code& e, const tcp::endpoint&) { ec = e; });
    RunUntilDone(ioc);
    if (ec) {
      std::string target = address_.HostPort();
      if (!endpoints.empty()) {
        const tcp::endpoint ep = endpoints.begin()->endpoint();
        target = ep.address().is_v6() ? absl::StrCat("[", ep.address().to_string(), "]:", ep.port())
                                      : absl::StrCat(ep.address().to_string(), ":", ep.port());
      }
      const std::string reason = ec == beast::error::timeout
                                     ? std::string("i/o timeout")
                                     : absl::StrCat("connect: ", ErrorText(ec));
      return fail(absl::StrCat("dial tcp ", target, ": ", reason), transport_code(ec));
    }

    http::request<http::string_body> request{verb, std::string(path_with_query), 11};
    request.set(http::field::host, address_.HostPort());
    request.set(http::field::user_agent, "drover-cli");
    request.set(http::field::accept, "application/json");
    if (!token_.empty()) {
      request.set("X-Nomad-Token", token_);
    }
    if (!body.empty()) {
      request.set(http::field::content_type, "application/json");
      request.body() = std::string(body);
    }
    request.prepare_payload();

    stream.expires_after(timeout);
    http::async_write(stream, request,
                      [&](const boost::system::error_code& e, std::size_t) { ec = e; });
    RunUntilDone(ioc);
    if (ec) {
      return fail(ErrorText(ec), transport_code(ec));
    }

    beast::flat_buffer buffer;
    if (on_data != nullptr)
      return ReadStreamed(stream, ioc, buffer, timeout, *on_data, fail);
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    stream.expires_after(timeout);
    http::async_read(stream, buffer, parser,
                     [&](const boost::system::error_code& e, std::size_t) { ec = e; });
    RunUntilDone(ioc);
    if (ec) {
      if (ec == beast::error::timeout) {
        return fail("context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    absl::StatusCode::kDeadlineExceeded);
      }
      return fail(ErrorText(ec), absl::StatusCode::kUnavailable);
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);

    http::response<http::string_body> message = parser.release();
    HttpResponse response;
    response.status = static_cast<int>(message.result_int());
    response.body = std::move(message.body());
    for (const auto& field : message) {
      response.headers[absl::AsciiStrToLower(std::string(field.name_string()))] =
          std::string(field.value());
    }
    if (auto it = response.headers.find("x-nomad-index"); it != response.headers.end()) {
      uint64_t index = 0;
      if (absl::SimpleAtoi(it->second, &index)) {
        response.index = index;
      }
    }
    if (response.status != 200) {
      return UnexpectedResponse(response.status, response.body);
    }
    return response;
  }

  template <typename Fail>
  static absl::StatusOr<HttpResponse> ReadStreamed(
      beast::tcp_stream& stream, boost::asio::io_context& ioc, beast::flat_buffer& buffer,
      std::chrono::milliseconds timeout, const std::function<bool(std::string_view)>& on_data,
      const Fail& fail) {
    boost::system::error_code ec;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    stream.expires_after(timeout);
    http::async_read_header(stream, buffer, parser,
                            [&](const boost::system::error_code& e, std::size_t) { ec = e; });
    RunUntilDone(ioc);
    if (ec) {
      return fail(ErrorText(ec), ec == beast::error::timeout ? absl::StatusCode::kDeadlineExceeded
                                                             : absl::StatusCode::kUnavailable);
    }
    // A followed body has no deadline: it lasts as long as the task writes.
    stream.expires_never();
    HttpResponse response;
    response.status = static_cast<int>(parser.get().result_int());
    std::string error_body;
    std::array<char, 16384> chunk{};
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      // read_some: hand over what came now, not once the buffer is full.
      http::async_read_some(stream, buffer, parser,
                            [&](const boost::system::error_code& e, std::size_t) { ec = e; });
      RunUntilDone(ioc);
      if (ec == http::error::need_buffer)
        ec = {};
      if (ec)
        return fail(ErrorText(ec), absl::StatusCode::kUnavailable);
      const size_t n = chunk.size() - parser.get().body().size;
      if (response.status != 200) {
        error_body.append(chunk.data(), n);
      } else if (n > 0 && !on_data(std::string_view(chunk.data(), n))) {
        break;
      }
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (response.status != 200)
      return UnexpectedResponse(response.status, error_body);
    return response;
  }

  const Address address_;
  const std::string token_;
};

}  // namespace

absl::Status HttpClient::Stream(std::string_view path_with_query,
                                const std::function<bool(std::string_view)>& on_data) {
  absl::StatusOr<HttpResponse> r = Do("GET", path_with_query);
  if (!r.ok())
    return r.status();
  if (!r->body.empty())
    on_data(r->body);
  return absl::OkStatus();
}

std::unique_ptr<HttpClient> NewHttpClient(Address address, std::string token) {
  return std::make_unique<BeastHttpClient>(std::move(address), std::move(token));
}

}  // namespace drover::cli
