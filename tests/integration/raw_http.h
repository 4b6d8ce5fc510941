// Plain sockets for tests that speak HTTP the way an attacker does: any bytes, any
// headers, connections held open, bodies never read.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace drover::integration {

struct RawResponse {
  int status = 0;                              // 0: no status line came back
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // as sent (chunked bodies not decoded)
};

// Connects to "127.0.0.1:port"; -1 on failure.
int ConnectTo(const std::string& address);
// Sends `request` on a new connection and reads until the server closes it, `timeout`
// passes, or `max_bytes` arrived.
RawResponse RawExchange(const std::string& address, const std::string& request,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10),
                        size_t max_bytes = 16 << 20);
// A request with the usual framing: Host, Content-Length, Connection: close.
std::string HttpRequest(const std::string& method, const std::string& target,
                        const std::string& address, const std::string& body = "",
                        const std::map<std::string, std::string>& headers = {});
// Parses what RawExchange read.
RawResponse ParseResponse(const std::string& bytes);

}  // namespace drover::integration
