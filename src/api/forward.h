// Forwarding for agents that do not hold what a request asks for: a client-only agent
// sends the server API (jobs, allocations, evaluations, nodes, ...) to its servers'
// RPC port, which serves the same /v1 API, and relays the answer as it came.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/router.h"

namespace drover::api {

// A handler that forwards each request to the first of `servers` ("host:port") that
// answers, starting with the one that answered last. 502 with the reason when none
// does. Blocking queries are held as long as the server holds them.
Handler ForwardToServers(std::vector<std::string> servers);

}  // namespace drover::api
