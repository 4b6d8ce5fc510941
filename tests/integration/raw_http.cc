#include "tests/integration/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace drover::integration {

int ConnectTo(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos)
    return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr) != 1)
    return -1;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

RawResponse ParseResponse(const std::string& bytes) {
  RawResponse r;
  const size_t end = bytes.find("\r\n\r\n");
  const std::string head = bytes.substr(0, end);
  if (head.rfind("HTTP/1.", 0) == 0 && head.size() >= 12)
    r.status = std::atoi(head.substr(9, 3).c_str());
  size_t at = head.find("\r\n");
  while (at != std::string::npos && at < head.size()) {
    const size_t next = head.find("\r\n", at + 2);
    const std::string line =
        head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
    if (const size_t c = line.find(':'); c != std::string::npos) {
      std::string name = line.substr(0, c);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      std::string value = line.substr(c + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers[name] = value;
    }
    at = next;
  }
  if (end != std::string::npos)
    r.body = bytes.substr(end + 4);
  return r;
}

RawResponse RawExchange(const std::string& address, const std::string& request,
                        std::chrono::milliseconds timeout, size_t max_bytes) {
  const int fd = ConnectTo(address);
  if (fd < 0)
    return {};
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += static_cast<size_t>(n);
  }
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  while (got.size() < max_bytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0)
      break;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return ParseResponse(got);
}

std::string HttpRequest(const std::string& method, const std::string& target,
                        const std::string& address, const std::string& body,
                        const std::map<std::string, std::string>& headers) {
  std::string r = method + " " + target + " HTTP/1.1\r\n";
  if (!headers.contains("Host"))
    r += "Host: " + address + "\r\n";
  for (const auto& [k, v] : headers)
    r += k + ": " + v + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  return r;
}

}  // namespace drover::integration
