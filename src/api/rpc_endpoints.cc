// The servers' side of Drover's client protocol (rpc/protocol.h, docs/cluster.md),
// served on the RPC port. Every call but registration must name a registered node and
// its secret; a node reaches only its own allocations.
#include <set>
#include <string>

#include "absl/strings/numbers.h"

#include "api/api_context.h"
#include "common/logging.h"
#include "rpc/protocol.h"

namespace drover::api {
namespace {

// Bodies up to this size are decoded on the loop; larger ones on the pool.
constexpr size_t kDecodeInline = 64 * 1024;
// Answers with more allocations than this are encoded on the pool.
constexpr size_t kEncodeInline = 8;

Response Ok(std::string body) {
  Response r;
  r.body = std::move(body);
  return r;
}

Response Refused(const absl::Status& s) {
  return Response::Error(rpc::HttpStatusFor(s), std::string(s.message()));
}

// Logs each refused (peer, reason) once, not with every retry of a misconfigured node;
// the set is bounded, and forgets everything once full.
class RefusalLog {
 public:
  void Log(const std::string& who, const absl::Status& s) {
    // Both bounded: a caller chooses the node ID it sends.
    std::string key = who.substr(0, 64) + "\n" + std::string(s.message().substr(0, 256));
    if (seen_.size() >= 1024)
      seen_.clear();
    if (seen_.insert(std::move(key)).second)
      DROVER_LOG_WARN("rpc: refused a call from node {}: {}", who.substr(0, 64),
                      s.ToString().substr(0, 512));
  }

 private:
  std::set<std::string> seen_;
};

std::string Header(const Request& req, std::string_view name) {
  auto it = req.headers.find(std::string(name));
  return it == req.headers.end() ? "" : it->second;
}

absl::Status CheckRegion(const ApiContext& ctx, const Request& req) {
  const std::string region = Header(req, rpc::kRegionHeader);
  if (region != ctx.server->region())
    return absl::InvalidArgumentError("No path to region \"" + region + "\": this server is in \"" +
                                      ctx.server->region() + "\"");
  return absl::OkStatus();
}

// A node bound to every address (0.0.0.0 or ::) is reached where its calls come from:
// servers forward client calls to that address, never to an unspecified one.
absl::Status ResolveHttpAddr(model::Node& node, const std::string& peer_ip) {
  if (node.http_addr.empty())
    return absl::OkStatus();  // not reachable: client calls for it cannot be forwarded
  const size_t colon = node.http_addr.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return absl::InvalidArgumentError("node HTTP address \"" + node.http_addr.substr(0, 128) +
                                      "\" is not host:port");
  const std::string host = node.http_addr.substr(0, colon);
  if (host == "0.0.0.0" || host == "::" || host == "[::]") {
    if (peer_ip.empty())
      return absl::InvalidArgumentError("node HTTP address is unspecified");
    const bool v6 = peer_ip.find(':') != std::string::npos;
    node.http_addr = (v6 ? "[" + peer_ip + "]" : peer_ip) + node.http_addr.substr(colon);
  }
  return absl::OkStatus();
}

// The authenticated node's ID.
absl::StatusOr<std::string> Authenticate(const ApiContext& ctx, const Request& req) {
  if (absl::Status s = CheckRegion(ctx, req); !s.ok())
    return s;
  std::string id = Header(req, rpc::kNodeIdHeader);
  if (id.empty())
    return absl::UnauthenticatedError("missing node ID");
  if (absl::Status s = ctx.server->AuthenticateNode(id, Header(req, rpc::kNodeSecretHeader));
      !s.ok())
    return s;
  return id;
}

// Runs `decode` on the body: on the loop when the body is small, on the pool otherwise.
template <typename Decode>
asio::awaitable<std::invoke_result_t<Decode, std::string_view>> DecodeBody(ApiContext& ctx,
                                                                           Request& req,
                                                                           Decode decode) {
  if (req.body.size() <= kDecodeInline)
    co_return decode(req.body);
  auto work = [&req, decode] { return decode(req.body); };
  co_return co_await OffloadRequestWork(ctx, std::move(work));  // named: see Offload
}

struct BlockingQuery {
  uint64_t index = 0;
  common::Duration wait{};
};

// ?index=N&wait=<ms>, the wait clamped to rpc::kMaxAllocationsWait.
absl::StatusOr<BlockingQuery> ParseBlockingQuery(const Request& req) {
  BlockingQuery q;
  int64_t wait_ms = 0;
  if ((req.HasQuery("index") && !absl::SimpleAtoi(req.Query("index"), &q.index)) ||
      (req.HasQuery("wait") && (!absl::SimpleAtoi(req.Query("wait"), &wait_ms) || wait_ms < 0)))
    return absl::InvalidArgumentError("index and wait must be non-negative integers");
  // Clamped before converting: a huge count of milliseconds overflows nanoseconds.
  const int64_t max_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(rpc::kMaxAllocationsWait).count();
  q.wait = std::chrono::milliseconds(std::min(wait_ms, max_ms));
  return q;
}

asio::awaitable<Response> RegisterNode(ApiContext& ctx, RefusalLog& log, Request& req) {
  const std::string who = Header(req, rpc::kNodeIdHeader);
  absl::StatusOr<model::Node> node = co_await DecodeBody(ctx, req, rpc::DecodeNode);
  absl::Status s = node.status();
  if (s.ok())
    s = CheckRegion(ctx, req);
  if (s.ok() && (node->id != who || node->secret_id != Header(req, rpc::kNodeSecretHeader)))
    s = absl::InvalidArgumentError("the node in the body is not the one the headers name");
  if (s.ok())
    s = ResolveHttpAddr(*node, req.peer_ip);
  absl::StatusOr<common::Duration> ttl =
      s.ok() ? ctx.server->RegisterNode(std::move(*node)) : absl::StatusOr<common::Duration>(s);
  if (!ttl.ok()) {
    log.Log(who, ttl.status());
    co_return Refused(ttl.status());
  }
  co_return Ok(rpc::EncodeTtl(*ttl));
}

asio::awaitable<Response> Heartbeat(ApiContext& ctx, RefusalLog& log, Request& req) {
  absl::StatusOr<std::string> node = Authenticate(ctx, req);
  absl::StatusOr<common::Duration> ttl =
      node.ok() ? ctx.server->Heartbeat(*node) : absl::StatusOr<common::Duration>(node.status());
  if (!ttl.ok()) {
    // A node the server does not know registers again: not worth a warning.
    if (!absl::IsNotFound(ttl.status()))
      log.Log(Header(req, rpc::kNodeIdHeader), ttl.status());
    co_return Refused(ttl.status());
  }
  co_return Ok(rpc::EncodeTtl(*ttl));
}

asio::awaitable<Response> Allocations(ApiContext& ctx, RefusalLog& log, Request& req) {
  absl::StatusOr<std::string> node = Authenticate(ctx, req);
  if (!node.ok()) {
    if (!absl::IsNotFound(node.status()))
      log.Log(Header(req, rpc::kNodeIdHeader), node.status());
    co_return Refused(node.status());
  }
  absl::StatusOr<BlockingQuery> q = ParseBlockingQuery(req);
  if (!q.ok())
    co_return Refused(q.status());
  absl::StatusOr<model::NodeAllocs> got =
      co_await ctx.server->WatchNodeAllocs(*node, q->index, q->wait);
  if (!got.ok())
    co_return Refused(got.status());
  const bool inline_encode = got->allocs.size() <= kEncodeInline;
  auto encode = [got = std::move(*got)] {
    std::vector<const model::Allocation*> allocs;
    allocs.reserve(got.allocs.size());
    for (const model::AllocPtr& a : got.allocs)
      allocs.push_back(a.get());
    return rpc::EncodeAllocations(got.index, allocs);
  };
  if (inline_encode)
    co_return Ok(encode());
  co_return Ok(co_await OffloadRequestWork(ctx, std::move(encode)));  // named: see Offload
}

asio::awaitable<Response> UpdateAllocs(ApiContext& ctx, RefusalLog& log, Request& req) {
  absl::StatusOr<std::string> node = Authenticate(ctx, req);
  absl::Status s = node.status();
  if (s.ok()) {
    absl::StatusOr<std::vector<model::AllocClientUpdate>> updates =
        co_await DecodeBody(ctx, req, rpc::DecodeUpdates);
    s = updates.status();
    if (s.ok()) {
      // The node in each update is the one that authenticated, whatever the body says.
      for (model::AllocClientUpdate& u : *updates)
        u.node_id = *node;
      s = co_await ctx.server->UpdateAllocsDurably(*node, std::move(*updates));
    }
  }
  if (!s.ok()) {
    if (!absl::IsNotFound(s))
      log.Log(Header(req, rpc::kNodeIdHeader), s);
    co_return Refused(s);
  }
  co_return Ok("{}");
}

asio::awaitable<Response> NodeEvents(ApiContext& ctx, RefusalLog& log, Request& req) {
  absl::StatusOr<std::string> node = Authenticate(ctx, req);
  absl::Status s = node.status();
  if (s.ok()) {
    absl::StatusOr<std::vector<model::NodeEvent>> events =
        co_await DecodeBody(ctx, req, rpc::DecodeNodeEvents);
    s = events.ok() ? ctx.server->EmitNodeEvents(*node, std::move(*events)) : events.status();
  }
  if (!s.ok()) {
    if (!absl::IsNotFound(s))
      log.Log(Header(req, rpc::kNodeIdHeader), s);
    co_return Refused(s);
  }
  co_return Ok("{}");
}

// The allocation that one of the node's allocations replaces; only the node's own.
asio::awaitable<Response> PreviousAlloc(ApiContext& ctx, RefusalLog& log, Request& req) {
  absl::StatusOr<std::string> node = Authenticate(ctx, req);
  absl::StatusOr<BlockingQuery> q = ParseBlockingQuery(req);
  absl::Status s = node.ok() ? q.status() : node.status();
  if (s.ok() && req.Query("alloc_id").empty())
    s = absl::InvalidArgumentError("missing alloc_id");
  if (!s.ok()) {
    log.Log(Header(req, rpc::kNodeIdHeader), s);
    co_return Refused(s);
  }
  absl::StatusOr<model::PrevAllocInfo> info =
      co_await ctx.server->WatchPreviousAlloc(*node, req.Query("alloc_id"), q->index, q->wait);
  if (!info.ok()) {
    if (absl::IsPermissionDenied(info.status()))
      log.Log(*node, info.status());
    co_return Refused(info.status());
  }
  co_return Ok(rpc::EncodePrevAllocInfo(*info));
}

}  // namespace

void RegisterRpcRoutes(Router& router, ApiContext& ctx) {
  auto log = std::make_shared<RefusalLog>();
  using Fn = asio::awaitable<Response> (*)(ApiContext&, RefusalLog&, Request&);
  auto add = [&](std::set<std::string> methods, std::string_view path, Fn fn) {
    router.Add(std::move(methods), std::string(path),
               [&ctx, log, fn](Request& req) { return fn(ctx, *log, req); });
  };
  add({"PUT", "POST"}, rpc::kRegisterPath, RegisterNode);
  add({"PUT", "POST"}, rpc::kHeartbeatPath, Heartbeat);
  add({"GET"}, rpc::kAllocationsPath, Allocations);
  add({"PUT", "POST"}, rpc::kUpdateAllocsPath, UpdateAllocs);
  add({"GET"}, rpc::kPreviousAllocPath, PreviousAlloc);
  add({"PUT", "POST"}, rpc::kNodeEventsPath, NodeEvents);
}

}  // namespace drover::api
