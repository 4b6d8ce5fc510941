#include "rpc/remote_server_rpc.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "common/logging.h"
#include "common/offload.h"
#include "rpc/protocol.h"

namespace drover::rpc {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

RemoteServerRpc::RemoteServerRpc(asio::thread_pool& pool, RemoteServerRpcOptions options)
    : pool_(pool), options_(std::move(options)) {}

asio::awaitable<absl::StatusOr<HttpReply>> RemoteServerRpc::Call(HttpCall call,
                                                                 common::Duration timeout) {
  if (options_.servers.empty())
    co_return absl::FailedPreconditionError("no servers configured");
  call.headers[std::string(kNodeIdHeader)] = node_id_;
  call.headers[std::string(kNodeSecretHeader)] = secret_id_;
  call.headers[std::string(kRegionHeader)] = options_.region;
  absl::Status last;
  for (size_t tried = 0; tried < options_.servers.size(); ++tried) {
    const size_t i = (current_ + tried) % options_.servers.size();
    absl::StatusOr<HttpReply> reply =
        co_await SendHttp(options_.servers[i], call, timeout, options_.limits);
    if (reply.ok() && reply->status != 503) {
      if (i != current_) {
        DROVER_LOG_INFO("client: now talking to server {}", options_.servers[i]);
        current_ = i;
        if (switched_) {
          switched_->Set();
          switched_.reset();
        }
      }
      if (reply->status != 200)
        co_return StatusFromHttp(reply->status, reply->body);
      co_return reply;
    }
    if (!reply.ok() &&
        (absl::IsCancelled(reply.status()) || absl::IsInvalidArgument(reply.status()) ||
         absl::IsResourceExhausted(reply.status())))
      co_return reply.status();
    last = reply.ok() ? StatusFromHttp(reply->status, reply->body) : reply.status();
  }
  co_return absl::UnavailableError("no server answered; last error: " + last.ToString());
}

asio::awaitable<absl::StatusOr<common::Duration>> RemoteServerRpc::RegisterNode(model::Node node) {
  node_id_ = node.id;
  secret_id_ = node.secret_id;
  HttpCall call{.method = "PUT", .target = std::string(kRegisterPath), .body = EncodeNode(node)};
  absl::StatusOr<HttpReply> reply = co_await Call(std::move(call), options_.call_timeout);
  if (!reply.ok())
    co_return reply.status();
  co_return LearnTtl(DecodeTtl(reply->body));
}

absl::StatusOr<common::Duration> RemoteServerRpc::LearnTtl(absl::StatusOr<common::Duration> ttl) {
  // A server that hangs (stopped, overloaded) must not hold a heartbeat past the TTL:
  // each server gets half of it before the next one is tried.
  if (ttl.ok()) {
    heartbeat_timeout_ =
        std::clamp<common::Duration>(*ttl / 2, std::chrono::seconds(1), options_.call_timeout);
  }
  return ttl;
}

asio::awaitable<absl::StatusOr<common::Duration>> RemoteServerRpc::Heartbeat(std::string node_id) {
  if (node_id != node_id_)
    co_return absl::FailedPreconditionError("node " + node_id + " has not registered");
  HttpCall call{.method = "PUT", .target = std::string(kHeartbeatPath)};
  absl::StatusOr<HttpReply> reply = co_await Call(std::move(call), heartbeat_timeout_);
  if (!reply.ok())
    co_return reply.status();
  co_return LearnTtl(DecodeTtl(reply->body));
}

asio::awaitable<absl::StatusOr<HttpReply>> RemoteServerRpc::Switching(HttpCall call,
                                                                      common::Duration timeout) {
  for (;;) {
    if (!switched_)
      switched_ = std::make_shared<common::Event>(co_await asio::this_coro::executor);
    const std::shared_ptr<common::Event> switched = switched_;
    auto polled = Call(call, timeout);
    auto moved = switched->Wait();
    auto r = co_await (std::move(polled) || std::move(moved));
    if (r.index() == 0)
      co_return std::move(std::get<0>(r));
    // Another call found the server this one waits on unhealthy (a hung server holds
    // a call until its timeout, a long poll for minutes): ask the one now in use. What
    // is sent again is idempotent (state the node reports, queries).
  }
}

asio::awaitable<absl::StatusOr<client::NodeAllocations>> RemoteServerRpc::GetNodeAllocations(
    std::string node_id, uint64_t min_index, common::Duration max_wait) {
  if (node_id != node_id_)
    co_return absl::FailedPreconditionError("node " + node_id + " has not registered");
  const common::Duration wait = std::min(max_wait, kMaxAllocationsWait);
  HttpCall call{
      .method = "GET",
      .target =
          std::string(kAllocationsPath) + "?index=" + std::to_string(min_index) + "&wait=" +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count())};
  absl::StatusOr<HttpReply> reply =
      co_await Switching(std::move(call), wait + options_.call_timeout);
  if (!reply.ok())
    co_return reply.status();
  // Named, not a temporary (common/offload.h): a node's allocations may be megabytes.
  auto decode = [body = std::move(reply->body)] { return DecodeAllocations(body); };
  absl::StatusOr<Allocations> decoded = co_await common::Offload(pool_, std::move(decode));
  if (!decoded.ok())
    co_return decoded.status();
  client::NodeAllocations out;
  out.index = decoded->index;
  out.allocs.reserve(decoded->allocs.size());
  for (model::Allocation& a : decoded->allocs)
    out.allocs.push_back(std::make_shared<const model::Allocation>(std::move(a)));
  co_return out;
}

asio::awaitable<absl::Status> RemoteServerRpc::UpdateAllocations(
    std::vector<model::AllocClientUpdate> updates) {
  if (node_id_.empty())
    co_return absl::FailedPreconditionError("the node has not registered");
  HttpCall call{
      .method = "PUT", .target = std::string(kUpdateAllocsPath), .body = EncodeUpdates(updates)};
  absl::StatusOr<HttpReply> reply = co_await Switching(std::move(call), options_.call_timeout);
  co_return reply.status();
}

asio::awaitable<absl::Status> RemoteServerRpc::EmitNodeEvents(
    std::string node_id, std::vector<model::NodeEvent> events) {
  if (node_id != node_id_)
    co_return absl::FailedPreconditionError("node " + node_id + " has not registered");
  HttpCall call{
      .method = "PUT", .target = std::string(kNodeEventsPath), .body = EncodeNodeEvents(events)};
  absl::StatusOr<HttpReply> reply = co_await Switching(std::move(call), options_.call_timeout);
  co_return reply.status();
}

asio::awaitable<absl::StatusOr<model::PrevAllocInfo>> RemoteServerRpc::GetPreviousAlloc(
    std::string node_id, std::string alloc_id, uint64_t min_index, common::Duration max_wait) {
  if (node_id != node_id_)
    co_return absl::FailedPreconditionError("node " + node_id + " has not registered");
  const common::Duration wait = std::min(max_wait, kMaxAllocationsWait);
  HttpCall call{.method = "GET",
                .target = std::string(kPreviousAllocPath) + "?alloc_id=" + alloc_id +
                          "&index=" + std::to_string(min_index) + "&wait=" +
                          std::to_string(
                              std::chrono::duration_cast<std::chrono::milliseconds>(wait).count())};
  absl::StatusOr<HttpReply> reply =
      co_await Switching(std::move(call), wait + options_.call_timeout);
  if (!reply.ok())
    co_return reply.status();
  co_return DecodePrevAllocInfo(reply->body);
}

}  // namespace drover::rpc
