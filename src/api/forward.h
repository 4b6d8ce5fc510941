// Forwarding for agents that do not hold what a request asks for: a client-only agent
// sends the server API (jobs, allocations, evaluations, nodes, ...) to its servers'
// RPC port, which serves the same /v1 API, and relays the answer as it came.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/api_context.h"
#include "api/router.h"

namespace drover::api {

// A handler that forwards each request to the first of `servers` ("host:port") that
// answers, starting with the one that answered last. 502 with the reason when none
// does. Blocking queries are held as long as the server holds them.
Handler ForwardToServers(std::vector<std::string> servers);

// On a server that is one of several (docs/ha.md): wraps a handler so that a write
// (any method but GET and HEAD) made to a follower goes to the leader's RPC port and
// its answer comes back as the leader gave it; 503 "No cluster leader" while there is
// none. Reads, and requests already forwarded once, are answered here.
Handler ForwardWritesToLeader(ApiContext& ctx, Handler local);

// On a server that is one of several: wraps a handler so that its answer's
// X-Nomad-KnownLeader says whether this server knows a leader now.
Handler ReportKnownLeader(ApiContext& ctx, Handler local);

// On a server: wraps a /v1/client/... handler so that a call for an allocation (the
// route's :id or :alloc) this agent does not run, or for another node's stats
// (?node_id=), goes to the agent of the node that runs it (its registered HTTP
// address), and the answer comes back as that agent gave it. 503 naming the node when
// it is down. Streams (fs stream, followed logs, snapshots) are relayed piece by piece
// as the node sends them (docs/cluster.md). Anything else goes to `local`.
Handler ForwardToAllocNode(ApiContext& ctx, Handler local);

}  // namespace drover::api
