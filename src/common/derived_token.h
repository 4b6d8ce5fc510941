// Tokens derived from a node's secret ID, so that a server can vouch for a caller to a
// node without the node keeping any state: the server, which knows every node's
// secret, hands the token to a caller it has checked, and the node recomputes it from
// its own secret. HMAC-SHA256 (Nettle), hex-encoded.
//
// The migrate token lets a replacement allocation on another node fetch the previous
// allocation's snapshot (GET /v1/client/allocation/:id/snapshot), and nothing else.
#pragma once

#include <string>
#include <string_view>

namespace drover::common {

std::string MigrateToken(std::string_view node_secret, std::string_view alloc_id);

// In constant time; false for an empty secret or token.
bool ValidMigrateToken(std::string_view node_secret, std::string_view alloc_id,
                       std::string_view token);

}  // namespace drover::common
