// /v1/status/*, /v1/regions, /v1/agent/*: what Nomad's CLI and API clients ask of the
// agent itself.
#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"

namespace drover::api {
namespace {

// The servers of the cluster: the agent alone, or what the server knows of its peers.
std::vector<ServerPeer> PeersOf(const ApiContext& ctx) {
  std::vector<ServerPeer> peers = ctx.server ? ctx.server->Peers() : std::vector<ServerPeer>{};
  if (peers.empty()) {
    peers.push_back(
        ServerPeer{.name = ctx.info.name,
                   .http_addr = ctx.info.bind_addr + ":" + std::to_string(ctx.info.http_port),
                   .rpc_addr = ctx.info.rpc_addr,
                   .leader = true});
  }
  return peers;
}

std::pair<std::string, std::string> SplitHostPort(const std::string& addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos)
    return {addr, ""};
  return {addr.substr(0, colon), addr.substr(colon + 1)};
}

codec::Json Member(const AgentInfo& info, const ServerPeer& peer) {
  const auto [host, port] = SplitHostPort(peer.rpc_addr);
  return {{"Name", peer.name + "." + info.region},
          {"Addr", host},
          {"Port", 4648},
          {"Tags",
           {{"role", "nomad"},
            {"region", info.region},
            {"dc", info.datacenter},
            {"build", info.version},
            {"port", port},
            {"raft_vsn", "3"},
            {"bootstrap", "1"}}},
          {"Status", "alive"},
          {"ProtocolMin", 1},
          {"ProtocolMax", 5},
          {"ProtocolCur", 2},
          {"DelegateMin", 2},
          {"DelegateMax", 5},
          {"DelegateCur", 4}};
}

// The servers this agent knows: itself when it is one, else those it was given.
std::vector<std::string> KnownServers(const AgentInfo& info) {
  if (info.servers.empty())
    return {info.rpc_addr};
  return info.servers;
}

uint64_t Index(ApiContext& ctx) {
  return ctx.server ? ctx.server->LatestIndex() : 1;
}

}  // namespace

void RegisterAgentRoutes(Router& router, ApiContext& ctx) {
  if (ctx.server != nullptr) {
    // A client-only agent forwards these to its servers.
    // Nomad answers "" while no leader is known.
    router.Add({"GET"}, "/v1/status/leader", [&ctx](Request& req) -> asio::awaitable<Response> {
      std::string leader;
      for (const ServerPeer& p : PeersOf(ctx)) {
        if (p.leader)
          leader = p.rpc_addr;
      }
      co_return JsonResponse(req, leader, Index(ctx));
    });
    router.Add({"GET"}, "/v1/status/peers", [&ctx](Request& req) -> asio::awaitable<Response> {
      codec::Json peers = codec::Json::array();
      for (const ServerPeer& p : PeersOf(ctx))
        peers.push_back(p.rpc_addr);
      co_return JsonResponse(req, peers, Index(ctx));
    });
    router.Add({"GET"}, "/v1/agent/members", [&ctx](Request& req) -> asio::awaitable<Response> {
      codec::Json members = codec::Json::array();
      for (const ServerPeer& p : PeersOf(ctx))
        members.push_back(Member(ctx.info, p));
      codec::Json body = {{"ServerName", ctx.info.name},
                          {"ServerRegion", ctx.info.region},
                          {"ServerDC", ctx.info.datacenter},
                          {"Members", std::move(members)}};
      co_return JsonResponse(req, body, Index(ctx));
    });
    // Nomad's shape; every Drover server is a voter of sorts: etcd holds the quorum.
    router.Add({"GET"}, "/v1/operator/raft/configuration",
               [&ctx](Request& req) -> asio::awaitable<Response> {
                 codec::Json servers = codec::Json::array();
                 for (const ServerPeer& p : PeersOf(ctx)) {
                   servers.push_back({{"ID", p.name},
                                      {"Node", p.name + "." + ctx.info.region},
                                      {"Address", p.rpc_addr},
                                      {"Leader", p.leader},
                                      {"Voter", true},
                                      {"RaftProtocol", "3"}});
                 }
                 codec::Json body = {{"Index", Index(ctx)}, {"Servers", std::move(servers)}};
                 co_return JsonResponse(req, body, Index(ctx));
               });
  }
  router.Add({"GET"}, "/v1/regions", [&ctx](Request& req) -> asio::awaitable<Response> {
    co_return JsonResponse(req, codec::Json::array({ctx.info.region}), Index(ctx));
  });
  router.Add({"GET"}, "/v1/agent/health", [&ctx](Request& req) -> asio::awaitable<Response> {
    codec::Json body = codec::Json::object();
    if (ctx.client)
      body["client"] = {{"ok", true}, {"message", "ok"}};
    if (ctx.server)
      body["server"] = {{"ok", true}, {"message", "ok"}};
    co_return JsonResponse(req, body, Index(ctx));
  });
  router.Add({"GET"}, "/v1/agent/servers", [&ctx](Request& req) -> asio::awaitable<Response> {
    codec::Json servers = codec::Json::array();
    for (const std::string& s : KnownServers(ctx.info))
      servers.push_back(s);
    co_return JsonResponse(req, servers, Index(ctx));
  });
  router.Add({"GET"}, "/v1/agent/self", [&ctx](Request& req) -> asio::awaitable<Response> {
    const AgentInfo& i = ctx.info;
    codec::Json config = {
        {"Region", i.region},
        {"Datacenter", i.datacenter},
        {"NodeName", i.name},
        {"DataDir", i.data_dir},
        {"BindAddr", i.bind_addr},
        {"DevMode", i.dev_mode},
        {"Version", {{"Version", i.version}, {"VersionPrerelease", ""}, {"VersionMetadata", ""}}},
        {"Ports", {{"HTTP", i.http_port}, {"RPC", i.rpc_port}, {"Serf", 4648}}},
        {"Server", {{"Enabled", ctx.server != nullptr}}},
        {"Client",
         {{"Enabled", ctx.client != nullptr}, {"NodeID", ctx.client ? ctx.client->node_id() : ""}}},
        {"UI", {{"Enabled", false}, {"ShowCLIHints", false}}},
        {"ACL", {{"Enabled", false}}}};
    codec::Json stats = {{"nomad",
                          {{"server", ctx.server ? "true" : "false"},
                           {"leader", ctx.server && ctx.server->IsLeader() ? "true" : "false"},
                           {"bootstrap", "true"},
                           {"known_regions", "1"}}}};
    if (ctx.server) {
      codec::Json raft = codec::Json::object();
      for (const auto& [k, v] : ctx.server->ReplicationStats())
        raft[k] = v;
      stats["raft"] = std::move(raft);
    }
    if (ctx.client) {
      stats["client"] = {{"node_id", ctx.client->node_id()},
                         {"known_servers", absl::StrJoin(KnownServers(i), ",")},
                         {"num_allocations", std::to_string(ctx.client->num_allocs())}};
    }
    const ServerPeer self{.name = i.name, .rpc_addr = i.rpc_addr};
    codec::Json body = {{"config", config}, {"member", Member(i, self)}, {"stats", stats}};
    co_return JsonResponse(req, body, Index(ctx));
  });
}

}  // namespace drover::api
