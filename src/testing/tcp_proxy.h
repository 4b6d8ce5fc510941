// A TCP proxy on 127.0.0.1 for fault tests: it forwards every connection to one
// target until Cut(), which closes every connection it carries and refuses new ones
// (accepted, then closed at once) until Restore(). A peer behind it sees its
// connections break while the target stays up for everyone else: a partition of one
// client, made without touching the network. Runs on its own thread.
#pragma once

#include <memory>
#include <string>

namespace drover::testing {

class TcpProxy {
 public:
  // `target`: "127.0.0.1:<port>".
  explicit TcpProxy(const std::string& target);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // "127.0.0.1:<port>" to connect to instead of the target.
  const std::string& endpoint() const;
  // Both return once done: after Cut, no byte passes until Restore.
  void Cut();
  void Restore();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace drover::testing
