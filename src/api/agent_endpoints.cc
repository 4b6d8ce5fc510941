// /v1/status/*, /v1/regions, /v1/agent/*: what Nomad's CLI and API clients ask of the
// agent itself.
#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include "api/api_context.h"
#include "api/query.h"

namespace drover::api {
namespace {

codec::Json Member(const AgentInfo& info) {
  return {{"Name", info.name + "." + info.region},
          {"Addr", info.bind_addr},
          {"Port", 4648},
          {"Tags",
           {{"role", "nomad"},
            {"region", info.region},
            {"dc", info.datacenter},
            {"build", info.version},
            {"port", std::to_string(info.rpc_port)},
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
    router.Add({"GET"}, "/v1/status/leader", [&ctx](Request& req) -> asio::awaitable<Response> {
      co_return JsonResponse(req, ctx.info.rpc_addr, Index(ctx));
    });
    router.Add({"GET"}, "/v1/status/peers", [&ctx](Request& req) -> asio::awaitable<Response> {
      co_return JsonResponse(req, codec::Json::array({ctx.info.rpc_addr}), Index(ctx));
    });
    router.Add({"GET"}, "/v1/agent/members", [&ctx](Request& req) -> asio::awaitable<Response> {
      codec::Json body = {{"ServerName", ctx.info.name},
                          {"ServerRegion", ctx.info.region},
                          {"ServerDC", ctx.info.datacenter},
                          {"Members", codec::Json::array({Member(ctx.info)})}};
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
                           {"leader", ctx.server ? "true" : "false"},
                           {"bootstrap", "true"},
                           {"known_regions", "1"}}}};
    if (ctx.client) {
      stats["client"] = {{"node_id", ctx.client->node_id()},
                         {"known_servers", absl::StrJoin(KnownServers(i), ",")},
                         {"num_allocations", std::to_string(ctx.client->num_allocs())}};
    }
    codec::Json body = {{"config", config}, {"member", Member(i)}, {"stats", stats}};
    co_return JsonResponse(req, body, Index(ctx));
  });
}

}  // namespace drover::api
