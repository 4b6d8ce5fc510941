#include "api/forward.h"

#include <limits>

#include "common/logging.h"
#include "common/percent_encode.h"
#include "rpc/http_call.h"
#include "rpc/protocol.h"

namespace drover::api {
namespace {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

// A blocking query waits up to 5 min plus jitter on the server: a little more here.
constexpr common::Duration kForwardTimeout = std::chrono::minutes(6);

// Headers a server needs to answer as it would have answered the caller.
constexpr const char* kForwardedHeaders[] = {"x-nomad-token", "content-type", "accept"};
// Set on every forwarded request: an agent never forwards one again, so a wrong
// address (a node registered as its own server's) cannot make a loop.
constexpr char kForwardedMark[] = "x-drover-forwarded";
// What a node's answer relayed by a server may hold (streams have no length limit: a
// followed log goes on as long as its task writes).
constexpr rpc::HttpCallLimits kNodeAnswerLimits{.max_body_bytes = 64 * 1024 * 1024};
constexpr rpc::HttpCallLimits kNodeStreamLimits{.max_body_bytes =
                                                    std::numeric_limits<uint64_t>::max()};
// How long a relayed stream may wait for the node's next piece. A followed log without
// framing sends nothing while its task is quiet, so this is long; a caller that leaves
// is noticed within kGoneCheck.
constexpr common::Duration kStreamIdle = std::chrono::hours(1);
// Until the node's answer starts, and for the whole of an error answer.
constexpr common::Duration kStreamHead = std::chrono::seconds(30);
constexpr common::Duration kGoneCheck = std::chrono::seconds(1);

bool AlreadyForwarded(const Request& req) {
  return req.headers.contains(kForwardedMark);
}
// Set on a write a follower sends to the leader: a server that gets one and does not
// lead (leadership moved meanwhile) answers it rather than forward it again. Separate
// from kForwardedMark: a client-only agent's request may reach a follower.
constexpr char kToLeaderMark[] = "x-drover-forwarded-to-leader";
// Headers of the answer worth relaying (besides the content type): as received (lower
// case), as sent.
constexpr std::pair<const char*, const char*> kRelayedHeaders[] = {
    {"x-nomad-index", "X-Nomad-Index"},
    {"x-nomad-knownleader", "X-Nomad-KnownLeader"},
    {"x-nomad-lastcontact", "X-Nomad-LastContact"}};

std::string TargetOf(const Request& req) {
  std::string target = req.raw_path.empty() ? req.path : req.raw_path;
  char sep = '?';
  // Repeated parameters (?topic=a&topic=b) travel as sent.
  const std::vector<std::pair<std::string, std::string>> params =
      req.query_list.empty()
          ? std::vector<std::pair<std::string, std::string>>(req.query.begin(), req.query.end())
          : req.query_list;
  for (const auto& [key, value] : params) {
    target += sep;
    target += common::PercentEncode(key);
    if (!value.empty()) {
      target += '=';
      target += common::PercentEncode(value);
    }
    sep = '&';
  }
  return target;
}

struct Servers {
  std::vector<std::string> list;
  size_t current = 0;
};

rpc::HttpCall CallFor(const Request& req) {
  rpc::HttpCall call{.method = req.method, .target = TargetOf(req), .body = req.body};
  for (const char* name : kForwardedHeaders) {
    auto it = req.headers.find(name);
    if (it != req.headers.end())
      call.headers[name] = it->second;
  }
  call.headers[kForwardedMark] = "1";
  return call;
}

Response Relay(rpc::HttpReply reply) {
  Response out;
  out.status = reply.status;
  auto type = reply.headers.find("content-type");
  out.content_type = type == reply.headers.end() ? "" : type->second;
  for (const auto& [received, sent] : kRelayedHeaders) {
    auto it = reply.headers.find(received);
    if (it != reply.headers.end())
      out.headers[sent] = it->second;
  }
  out.body = std::move(reply.body);
  return out;
}

asio::awaitable<Response> Forward(std::shared_ptr<Servers> servers, Request& req) {
  // Only the API goes to the servers, and only once.
  if (!req.path.starts_with("/v1/") || AlreadyForwarded(req))
    co_return Response::Error(404, "Invalid URL");
  // Forwarding here waits for the whole answer: an endless stream would never come.
  if (req.path == "/v1/event/stream") {
    co_return Response::Error(
        501, "the event stream is not relayed by a client-only agent yet: ask a server");
  }
  const rpc::HttpCall call = CallFor(req);
  std::string last;
  for (size_t tried = 0; tried < servers->list.size(); ++tried) {
    const size_t i = (servers->current + tried) % servers->list.size();
    absl::StatusOr<rpc::HttpReply> reply =
        co_await rpc::SendHttp(servers->list[i], call, kForwardTimeout);
    if (!reply.ok()) {
      if (absl::IsCancelled(reply.status()) || absl::IsResourceExhausted(reply.status()))
        co_return Response::Error(502, std::string(reply.status().message()));
      last = reply.status().ToString();
      continue;
    }
    servers->current = i;
    co_return Relay(*std::move(reply));
  }
  co_return Response::Error(502, "no server answered: " + last);
}

// The node another agent should answer `req` for, or null when this agent answers.
model::NodePtr RemoteNodeFor(ApiContext& ctx, const Request& req) {
  std::string alloc_id;
  for (const char* param : {"id", "alloc"}) {
    if (auto it = req.params.find(param); it != req.params.end())
      alloc_id = it->second;
  }
  const std::string local = ctx.client != nullptr ? ctx.client->node_id() : "";
  std::string node_id;
  if (!alloc_id.empty()) {
    if (ctx.client != nullptr && ctx.client->HasAlloc(alloc_id))
      return nullptr;
    model::AllocPtr alloc = ctx.server->GetAlloc(alloc_id);
    if (!alloc)
      return nullptr;  // the local handler says it is unknown
    node_id = alloc->node_id;
  } else {
    node_id = req.Query("node_id");
  }
  if (node_id.empty() || node_id == local)
    return nullptr;
  return ctx.server->GetNode(node_id);
}

// Answers that come over time, or that may be large archives: relayed as they come.
bool IsStream(const Request& req) {
  return req.path.starts_with("/v1/client/fs/stream/") ||
         (req.path.starts_with("/v1/client/allocation/") && req.path.ends_with("/snapshot")) ||
         (req.path.starts_with("/v1/client/fs/logs/") && req.Query("follow") == "true");
}

// Returns once the caller of a relayed stream has gone.
asio::awaitable<void> CallerGone(common::Clock& clock, StreamWriter& out) {
  while (!out.ClientGone())
    co_await clock.Sleep(kGoneCheck);
}

// Copies the node's answer to the caller piece by piece, until either side ends it.
asio::awaitable<void> Pump(ApiContext& ctx, std::shared_ptr<rpc::HttpStream> from,
                           StreamWriter& out) {
  for (;;) {
    auto r = co_await (from->Next() || CallerGone(*ctx.clock, out));
    if (r.index() == 1)
      co_return;
    absl::StatusOr<std::string>& piece = std::get<0>(r);
    if (!piece.ok()) {
      DROVER_LOG_DEBUG("relayed stream ended: {}", piece.status().ToString());
      co_return;
    }
    if (piece->empty())
      co_return;
    const bool sent = co_await out.Write(*std::move(piece));
    if (!sent)
      co_return;
  }
}

// A node's streamed answer (followed logs, fs/stream, a snapshot), relayed as it comes:
// its status and headers at once, then its body.
asio::awaitable<Response> RelayStream(ApiContext& ctx, const model::Node& node, Request& req) {
  rpc::HttpCall call = CallFor(req);
  // The caller's token is for the servers; a snapshot's is the node's migrate token.
  if (!req.path.ends_with("/snapshot"))
    call.headers.erase("x-nomad-token");
  absl::StatusOr<std::unique_ptr<rpc::HttpStream>> opened = co_await rpc::HttpStream::Open(
      node.http_addr, std::move(call), kStreamHead, kNodeStreamLimits);
  if (!opened.ok())
    co_return Response::Error(502,
                              "node " + node.id + ": " + std::string(opened.status().message()));
  std::shared_ptr<rpc::HttpStream> stream(std::move(*opened));
  Response out = Relay(stream->head());
  if (out.status != 200) {
    // An error's text, bounded in size and time.
    const common::Time until = ctx.clock->Now() + kStreamHead;
    while (out.body.size() <= 64 * 1024 && ctx.clock->Now() < until) {
      absl::StatusOr<std::string> piece = co_await stream->Next();
      if (!piece.ok() || piece->empty())
        break;
      out.body += *piece;
    }
    co_return out;
  }
  stream->set_idle_timeout(kStreamIdle);
  out.stream = [&ctx, stream](StreamWriter& w) { return Pump(ctx, stream, w); };
  co_return out;
}

asio::awaitable<Response> ForwardToNode(ApiContext& ctx, const Handler& local, Request& req) {
  model::NodePtr node = AlreadyForwarded(req) ? nullptr : RemoteNodeFor(ctx, req);
  if (node == nullptr)
    co_return co_await local(req);
  if (node->status == model::kNodeStatusDown)
    co_return Response::Error(503, "node " + node->id + " (" + node->name + ") is down");
  if (node->http_addr.empty())
    co_return Response::Error(502, "node " + node->id + " has no HTTP address");
  if (IsStream(req))
    co_return co_await RelayStream(ctx, *node, req);
  rpc::HttpCall call = CallFor(req);
  call.headers.erase("x-nomad-token");  // the caller's token is for the servers
  absl::StatusOr<rpc::HttpReply> reply =
      co_await rpc::SendHttp(node->http_addr, std::move(call), kForwardTimeout, kNodeAnswerLimits);
  if (!reply.ok())
    co_return Response::Error(502,
                              "node " + node->id + ": " + std::string(reply.status().message()));
  co_return Relay(*std::move(reply));
}

asio::awaitable<Response> ForwardToLeader(ApiContext& ctx, const Handler& local, Request& req) {
  if (req.method == "GET" || req.method == "HEAD" || ctx.server == nullptr ||
      ctx.server->IsLeader() || req.headers.contains(kToLeaderMark))
    co_return co_await local(req);
  std::string leader;
  for (const ServerPeer& p : ctx.server->Peers()) {
    if (p.leader)
      leader = p.rpc_addr;
  }
  if (leader.empty())
    co_return Response::Error(503, "No cluster leader");
  rpc::HttpCall call = CallFor(req);
  call.headers[kToLeaderMark] = "1";
  // A node's calls carry who it is: the leader checks that, as this server would have.
  for (std::string_view name : {rpc::kNodeIdHeader, rpc::kNodeSecretHeader, rpc::kRegionHeader}) {
    auto it = req.headers.find(std::string(name));
    if (it != req.headers.end())
      call.headers[std::string(name)] = it->second;
  }
  absl::StatusOr<rpc::HttpReply> reply =
      co_await rpc::SendHttp(leader, std::move(call), kForwardTimeout);
  // 503, not 502: a node's call then goes to another server, which may reach the leader.
  if (!reply.ok())
    co_return Response::Error(503, "the cluster leader at " + leader +
                                       " did not answer: " + std::string(reply.status().message()));
  co_return Relay(*std::move(reply));
}

asio::awaitable<Response> WithKnownLeader(ApiContext& ctx, const Handler& local, Request& req) {
  Response r = co_await local(req);
  if (r.headers.contains("X-Nomad-KnownLeader")) {
    bool known = false;
    for (const ServerPeer& p : ctx.server->Peers())
      known = known || p.leader;
    r.headers["X-Nomad-KnownLeader"] = known ? "true" : "false";
  }
  co_return r;
}

}  // namespace

Handler ReportKnownLeader(ApiContext& ctx, Handler local) {
  return
      [&ctx, local = std::move(local)](Request& req) { return WithKnownLeader(ctx, local, req); };
}

Handler ForwardWritesToLeader(ApiContext& ctx, Handler local) {
  return
      [&ctx, local = std::move(local)](Request& req) { return ForwardToLeader(ctx, local, req); };
}

Handler ForwardToAllocNode(ApiContext& ctx, Handler local) {
  return [&ctx, local = std::move(local)](Request& req) { return ForwardToNode(ctx, local, req); };
}

Handler ForwardToServers(std::vector<std::string> servers) {
  auto state = std::make_shared<Servers>(Servers{.list = std::move(servers)});
  return [state](Request& req) { return Forward(state, req); };
}

}  // namespace drover::api
