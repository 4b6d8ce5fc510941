// Servers sharing one real etcd, each with its HA coordinator, on one io_context: the
// harness of the HA tests (ha_test.cc) and of the backend conformance suite
// (state_conformance_test.cc).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codec/prepared_job.h"
#include "server/ha.h"
#include "server/server.h"
#include "testing/await.h"
#include "testing/etcd_process.h"
#include "testing/test_util.h"

namespace drover::server::test {

class HaTestCluster {
 public:
  struct Peer {
    std::unique_ptr<Server> server;
    std::unique_ptr<HaCoordinator> ha;
  };

  HaTestCluster() = default;
  HaTestCluster(const HaTestCluster&) = delete;
  HaTestCluster& operator=(const HaTestCluster&) = delete;
  ~HaTestCluster() { StopAll(); }

  void StopAll() {
    for (auto& p : peers_)
      Stop(*p);
    peers_.clear();
  }

  // `endpoint`: etcd's own unless given (a proxy in front of it).
  HaConfig Config(const std::string& endpoint = "") {
    return HaConfig{.endpoints = {endpoint.empty() ? etcd_.endpoint() : endpoint},
                    .prefix = "/drover",
                    .dial_timeout = std::chrono::seconds(2),
                    .lease_ttl_seconds = 2};
  }
  // A server and its coordinator, not yet connected.
  Peer& Add(const std::string& name, HaConfig config) {
    auto p = std::make_unique<Peer>();
    p->server = std::make_unique<Server>(
        io_.get_executor(), pool_, clock_,
        ServerConfig{.min_heartbeat_ttl = std::chrono::seconds(30), .ha = true});
    p->server->Start();
    p->ha = std::make_unique<HaCoordinator>(
        io_.get_executor(), *p->server, pool_, clock_, std::move(config),
        Member{.name = name, .http_addr = name + ":4646", .rpc_addr = name + ":4647"});
    peers_.push_back(std::move(p));
    return *peers_.back();
  }
  // A server connected (its view loaded) and started.
  Peer& Join(const std::string& name, std::optional<HaConfig> config = std::nullopt) {
    Peer& p = Add(name, config ? *std::move(config) : Config());
    absl::Status connected = Run(p.ha->Connect());
    EXPECT_TRUE(connected.ok()) << connected;
    p.ha->Start();
    return p;
  }
  // Starts the coordinator's Stop; `stopped` is set once it returns.
  void StartStop(Peer& p, bool& stopped) {
    asio::co_spawn(
        io_,
        [&p, &stopped]() -> asio::awaitable<void> {
          co_await p.ha->Stop();
          stopped = true;
        },
        asio::detached);
  }
  void Stop(Peer& p) {
    bool stopped = false;
    StartStop(p, stopped);
    EXPECT_TRUE(Until([&] { return stopped; }));
    p.server->Stop();
    testing::RunUntil(
        io_, [&] { return p.ha->stopped(); }, std::chrono::seconds(5));
  }
  // Stops `p` (it resigns if it leads) and forgets it.
  void Remove(Peer& p) {
    Stop(p);
    std::erase_if(peers_, [&](const auto& q) { return q.get() == &p; });
  }

  template <typename T>
  T Run(asio::awaitable<T> work) {
    return testing::Await(io_, std::move(work), std::chrono::seconds(30));
  }
  bool Until(const std::function<bool()>& pred,
             common::Duration timeout = std::chrono::seconds(15)) {
    return testing::RunUntil(io_, pred,
                             std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  }
  Peer* LeaderOf(std::initializer_list<Peer*> peers) {
    Peer* found = nullptr;
    for (Peer* p : peers) {
      if (p->server->leader()) {
        if (found != nullptr)
          ADD_FAILURE() << "two leaders";
        found = p;
      }
    }
    return found;
  }
  // The leader among every peer, once there is one (null after 15 s).
  Peer* AwaitLeader() {
    Peer* found = nullptr;
    Until([&] {
      for (auto& p : peers_) {
        if (p->server->leader())
          found = p.get();
      }
      return found != nullptr;
    });
    return found;
  }
  // Registers `job` on `leader`, durably; the error when it is refused.
  absl::StatusOr<EvalResponse> TryRegister(Peer& leader, model::Job job,
                                           std::optional<uint64_t> enforce_index = std::nullopt) {
    auto prepared = codec::PrepareJob(std::move(job), "global");
    if (!prepared.ok())
      return prepared.status();
    return Run(leader.server->RegisterJobDurably(*std::move(prepared), enforce_index));
  }
  EvalResponse Register(Peer& leader, model::Job job) {
    auto resp = TryRegister(leader, std::move(job));
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.value_or(EvalResponse{});
  }
  size_t Allocs(Peer& p, const std::string& job) {
    return p.server->state().AllocsByJob("default", job).size();
  }

 protected:
  testing::EtcdProcess etcd_;
  asio::io_context io_;
  asio::thread_pool pool_{2};
  common::RealClock clock_;
  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace drover::server::test
