// Drover's client-to-server protocol (docs/cluster.md): HTTP/1.1 with JSON bodies on
// the servers' RPC port. A client sends its node ID and secret with every call; the
// server answers errors as plain text with an HTTP status that maps to a Status code.
// Paths, header names and the bodies' encoding live here, so the two sides cannot
// drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/clock.h"
#include "model/allocation.h"
#include "model/node.h"
#include "model/prev_alloc_info.h"

namespace drover::rpc {

inline constexpr std::string_view kRegisterPath = "/rpc/v1/node/register";    // PUT
inline constexpr std::string_view kHeartbeatPath = "/rpc/v1/node/heartbeat";  // PUT
// GET ?index=N&wait=<ms>: the node's allocations once their index passes N.
inline constexpr std::string_view kAllocationsPath = "/rpc/v1/node/allocations";
inline constexpr std::string_view kUpdateAllocsPath = "/rpc/v1/allocations/update";  // PUT
// GET ?alloc_id=ID&index=N&wait=<ms>: the allocation that the node's allocation ID
// replaces, once it is done (model/prev_alloc_info.h).
inline constexpr std::string_view kPreviousAllocPath = "/rpc/v1/allocation/previous";
// PUT: events the node reports about itself (model::NodeEvent; a driver's health).
inline constexpr std::string_view kNodeEventsPath = "/rpc/v1/node/events";

// Request headers (lower case, as the API's Request holds them).
inline constexpr std::string_view kNodeIdHeader = "x-drover-node-id";
inline constexpr std::string_view kNodeSecretHeader = "x-drover-node-secret";
inline constexpr std::string_view kRegionHeader = "x-drover-region";

// The longest a server holds an allocations query open, and what a client asks for.
inline constexpr common::Duration kMaxAllocationsWait = std::chrono::minutes(5);

// Bodies. Every decoder refuses malformed input with InvalidArgument naming the field.
std::string EncodeNode(const model::Node& node);  // the secret included
absl::StatusOr<model::Node> DecodeNode(std::string_view body);
std::string EncodeTtl(common::Duration ttl);  // {"HeartbeatTTL": <ns>}
absl::StatusOr<common::Duration> DecodeTtl(std::string_view body);

struct Allocations {
  uint64_t index = 0;
  std::vector<model::Allocation> allocs;
};
std::string EncodeAllocations(uint64_t index, const std::vector<const model::Allocation*>& allocs);
absl::StatusOr<Allocations> DecodeAllocations(std::string_view body);
std::string EncodeUpdates(const std::vector<model::AllocClientUpdate>& updates);
absl::StatusOr<std::vector<model::AllocClientUpdate>> DecodeUpdates(std::string_view body);

std::string EncodeNodeEvents(const std::vector<model::NodeEvent>& events);  // {"Events": [...]}
absl::StatusOr<std::vector<model::NodeEvent>> DecodeNodeEvents(std::string_view body);
std::string EncodePrevAllocInfo(const model::PrevAllocInfo& info);
absl::StatusOr<model::PrevAllocInfo> DecodePrevAllocInfo(std::string_view body);

// Errors on the wire: the status a server answers a failed call with, and the Status a
// client makes of a non-200 answer ("<what the server said>" with the matching code).
int HttpStatusFor(const absl::Status& status);
absl::Status StatusFromHttp(int http_status, std::string_view body);

}  // namespace drover::rpc
