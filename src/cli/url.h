// The agent address the CLI talks to, and URL escaping for the paths it builds.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace drover::cli {

inline constexpr char kDefaultAddress[] = "http://127.0.0.1:4646";

// A parsed agent address. Only plain HTTP is supported.
struct Address {
  std::string scheme = "http";
  std::string host = "127.0.0.1";  // without brackets for IPv6 literals
  int port = 4646;

  // "http://127.0.0.1:4646" (IPv6 hosts in brackets).
  std::string ToString() const;
  // "127.0.0.1:4646", as Go prints a dial target.
  std::string HostPort() const;
};

// Parses "http://host:port", "http://host" (port 80, as Go's net/http) or "host:port"
// (taken as http). Errors: InvalidArgument for malformed text or a path other than "/",
// Unimplemented for https and unix sockets.
absl::StatusOr<Address> ParseAddress(std::string_view text);

// The address to use: `flag` when not empty, else `env_nomad_addr` (the value of
// NOMAD_ADDR, may be null) when not empty, else kDefaultAddress.
std::string ChooseAddress(std::string_view flag, const char* env_nomad_addr);

// Percent-encodes one path segment (Go's url.PathEscape): everything but RFC 3986
// unreserved characters and sub-delims allowed in a segment.
std::string PathEscape(std::string_view segment);
// Percent-encodes a query value (Go's url.QueryEscape: space becomes '+').
std::string QueryEscape(std::string_view value);

}  // namespace drover::cli
