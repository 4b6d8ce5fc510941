#include "testing/tcp_proxy.h"

#include <array>
#include <future>
#include <set>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "common/asio.h"

namespace drover::testing {

namespace {
using tcp = asio::ip::tcp;

// One proxied connection: both sockets, closed together.
struct Link {
  explicit Link(asio::io_context& io) : client(io), server(io) {}
  void Close() {
    boost::system::error_code ignored;
    client.close(ignored);
    server.close(ignored);
  }
  tcp::socket client;
  tcp::socket server;
};
}  // namespace

struct TcpProxy::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  tcp::endpoint target;
  std::string endpoint;
  bool cut = false;  // on the proxy's thread only
  std::set<std::shared_ptr<Link>> links;
  std::thread thread;

  asio::awaitable<void> Accept() {
    for (;;) {
      auto link = std::make_shared<Link>(io);
      auto [ec] = co_await acceptor.async_accept(link->client, asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::operation_aborted)
        co_return;
      if (ec)
        continue;
      if (cut) {
        link->Close();
        continue;
      }
      asio::co_spawn(io, Carry(std::move(link)), asio::detached);
    }
  }

  asio::awaitable<void> Carry(std::shared_ptr<Link> link) {
    auto [ec] = co_await link->server.async_connect(target, asio::as_tuple(asio::use_awaitable));
    if (ec || cut) {
      link->Close();
      co_return;
    }
    links.insert(link);
    asio::co_spawn(io, Pump(link, link->client, link->server), asio::detached);
    co_await Pump(link, link->server, link->client);
  }

  // Copies `from` to `to` until either fails; then closes the link.
  asio::awaitable<void> Pump(std::shared_ptr<Link> link, tcp::socket& from, tcp::socket& to) {
    std::array<char, 16384> buf;
    for (;;) {
      auto [rec, n] =
          co_await from.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
      if (rec)
        break;
      auto [wec, written] = co_await asio::async_write(to, asio::buffer(buf.data(), n),
                                                       asio::as_tuple(asio::use_awaitable));
      if (wec)
        break;
    }
    link->Close();
    links.erase(link);
  }

  // Runs `fn` on the proxy's thread and waits for it.
  template <typename F>
  void OnThread(F fn) {
    std::promise<void> done;
    asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
};

TcpProxy::TcpProxy(const std::string& target) : impl_(std::make_unique<Impl>()) {
  const size_t colon = target.rfind(':');
  impl_->target = tcp::endpoint(asio::ip::make_address(target.substr(0, colon)),
                                static_cast<uint16_t>(std::stoi(target.substr(colon + 1))));
  const tcp::endpoint local(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(local.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(local);
  impl_->acceptor.listen();
  impl_->endpoint = "127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port());
  asio::co_spawn(impl_->io, impl_->Accept(), asio::detached);
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

TcpProxy::~TcpProxy() {
  impl_->OnThread([this] {
    impl_->acceptor.close();
    for (const auto& link : impl_->links)
      link->Close();
  });
  impl_->io.stop();
  impl_->thread.join();
}

const std::string& TcpProxy::endpoint() const {
  return impl_->endpoint;
}

void TcpProxy::Cut() {
  impl_->OnThread([this] {
    impl_->cut = true;
    for (const auto& link : impl_->links)
      link->Close();
  });
}

void TcpProxy::Restore() {
  impl_->OnThread([this] { impl_->cut = false; });
}

}  // namespace drover::testing
