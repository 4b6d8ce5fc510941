#include "rpc/http_call.h"

#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
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

// What the deadline timer and the caller's cancellation share with the call: either
// closes the socket, which ends whatever operation is pending. Held by shared_ptr as
// their handlers may run after the call has returned.
struct CallState {
  explicit CallState(asio::any_io_executor ex) : socket(ex), resolver(ex), deadline(ex) {}
  tcp::socket socket;
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

// "host:port" → host, port; IPv6 literals in brackets ("[::1]:4647").
absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address) {
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
                                                              HttpCall call) {
  http::request<http::string_body> req{http::string_to_verb(call.method), call.target, 11};
  if (req.method() == http::verb::unknown)
    return absl::InvalidArgumentError("unknown HTTP method " + call.method);
  req.set(http::field::host, address);
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : call.headers)
    req.set(name, value);
  if (!call.body.empty()) {
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

}  // namespace

asio::awaitable<absl::StatusOr<HttpReply>> SendHttp(std::string address, HttpCall call,
                                                    common::Duration timeout,
                                                    HttpCallLimits limits) {
  auto split = SplitAddress(address);
  if (!split.ok())
    co_return split.status();
  // Checked before anything is sent.
  absl::StatusOr<http::request<http::string_body>> req = BuildRequest(address, std::move(call));
  if (!req.ok())
    co_return req.status();
  auto ex = co_await asio::this_coro::executor;
  auto state = std::make_shared<CallState>(ex);
  state->deadline.expires_after(timeout);
  state->deadline.async_wait(
      [weak = std::weak_ptr<CallState>(state)](boost::system::error_code ec) {
        if (ec)
          return;
        if (auto s = weak.lock()) {
          s->timed_out = true;
          s->Abort();
        }
      });
  asio::cancellation_state cs = co_await asio::this_coro::cancellation_state;
  if (cs.cancelled() != asio::cancellation_type::none)
    co_return absl::CancelledError("call to " + address + " cancelled");
  asio::cancellation_slot slot = cs.slot();
  // Asio clears the coroutine's slot each time an operation completes: armed again
  // before each one.
  auto arm = [&slot, weak = std::weak_ptr<CallState>(state)] {
    if (slot.is_connected()) {
      slot.assign([weak](asio::cancellation_type) {
        if (auto s = weak.lock()) {
          s->cancelled = true;
          s->Abort();
        }
      });
    }
  };
  struct Cleanup {
    asio::cancellation_slot slot;
    CallState& state;
    ~Cleanup() {
      if (slot.is_connected())
        slot.clear();
      state.deadline.cancel();
      boost::system::error_code ignored;
      state.socket.close(ignored);
    }
  } cleanup{slot, *state};

  auto failed = [&](std::string_view step, const boost::system::error_code& ec) -> absl::Status {
    if (state->cancelled)
      return absl::CancelledError("call to " + address + " cancelled");
    if (state->timed_out)
      return absl::DeadlineExceededError(std::string(step) + " " + address + ": timed out");
    return absl::UnavailableError(std::string(step) + " " + address + ": " + ec.message());
  };

  arm();
  auto [rec, endpoints] = co_await state->resolver.async_resolve(split->first, split->second, Op());
  if (rec || state->cancelled || state->timed_out)
    co_return failed("resolve", rec);
  arm();
  auto [cec, endpoint] = co_await asio::async_connect(state->socket, endpoints, Op());
  if (cec || state->cancelled || state->timed_out)
    co_return failed("dial", cec);

  arm();
  auto [wec, written] = co_await http::async_write(state->socket, *req, Op());
  if (wec || state->cancelled || state->timed_out)
    co_return failed("write to", wec);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
  arm();
  auto [ec, read] = co_await http::async_read(state->socket, buffer, parser, Op());
  if (ec == http::error::body_limit || ec == http::error::header_limit)
    co_return absl::ResourceExhaustedError("the answer of " + address + " is too large");
  if (ec || state->cancelled || state->timed_out)
    co_return failed("read from", ec);
  co_return ToReply(parser.release());
}

}  // namespace drover::rpc
