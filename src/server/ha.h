// Several servers sharing their state in etcd (docs/ha.md): the coordinator that keeps a
// server's view replicated, its membership known, and that makes it the leader while it
// holds the election.
//
//   <prefix>/state/...        the state records (state_store.h's layout)
//   <prefix>/state/meta/version, meta/cluster   schema version and cluster identity
//   <prefix>/leader           the election key: the leader's Member, under its lease
//   <prefix>/members/<name>   each live server's Member, under its own lease
//
// One watch (etcd::Mirror) follows the whole prefix. A follower applies every state
// record to its StateStore as it comes; the leader's own writes come back the same way
// and are ignored while it leads. A candidate that wins waits until its view holds every
// revision etcd had when it won, then writes through a state::Store whose transactions
// are fenced by its term. A term ends when the lease cannot be kept, a write fails, or
// the agent stops; the server then stops its leader loops at once, and its view, which
// may be ahead of etcd by writes that never committed, is loaded again from the watch's
// copy.
//
// On the control loop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

#include "common/asio.h"
#include "common/cancellation.h"
#include "common/clock.h"
#include "common/event.h"
#include "etcd/client.h"
#include "etcd/election.h"
#include "etcd/mirror.h"
#include "server/server.h"

namespace drover::server {

struct HaConfig {
  std::vector<std::string> endpoints;  // "host:port" of etcd's client URLs
  std::string prefix = "/drover";
  common::Duration dial_timeout = std::chrono::seconds(5);  // each call to etcd
  int64_t lease_ttl_seconds = 10;
  std::string region = "global";
  // The first leader of an empty state waits until this many servers are members.
  int bootstrap_expect = 1;
};

// A server as the others see it.
struct Member {
  std::string name;
  std::string http_addr;
  std::string rpc_addr;
  bool leader = false;
  friend bool operator==(const Member&, const Member&) = default;
};

class HaCoordinator {
 public:
  // `server`, `pool` and `clock` must outlive it; `self` is this server.
  HaCoordinator(asio::any_io_executor executor, Server& server, asio::thread_pool& pool,
                common::Clock& clock, HaConfig config, Member self);
  HaCoordinator(const HaCoordinator&) = delete;
  HaCoordinator& operator=(const HaCoordinator&) = delete;

  // Checks what the prefix holds (FailedPrecondition, naming it, for another cluster's
  // state or another schema version; an empty prefix is initialised), then loads the
  // view. While no endpoint answers, logs an error naming them and retries with
  // backoff, until `stop` is cancelled.
  asio::awaitable<absl::Status> Connect();
  // Replication, membership and the election, until Stop. After Connect succeeded.
  void Start();
  // Ends the term (resigning, so another server takes over at once) and the loops;
  // returns once they have ended (or after twice the dial timeout).
  asio::awaitable<void> Stop();
  bool stopped() const { return loops_ == 0; }

  bool leader() const { return server_.leader(); }
  // The leader as this server last saw it (nullopt: none).
  std::optional<Member> Leader() const;
  // Every live server, the leader marked; sorted by name.
  std::vector<Member> Members() const;
  const Member& self() const { return self_; }
  const etcd::Mirror& mirror() const { return mirror_; }

 private:
  asio::awaitable<absl::Status> CheckPrefix();
  asio::awaitable<void> ReplicateLoop();
  asio::awaitable<void> MembershipLoop();
  asio::awaitable<void> CampaignLoop();
  // One term, from winning the election until it ends.
  asio::awaitable<void> Lead(etcd::Term term);
  // The state records the watch's copy holds, keyed as StateStore lays them out.
  std::vector<StateStore::Record> StateRecords() const;

  asio::any_io_executor executor_;
  Server& server_;
  asio::thread_pool& pool_;
  common::Clock& clock_;
  HaConfig config_;
  Member self_;
  std::string root_;          // the prefix without its trailing '/'
  std::string state_prefix_;  // <root>/state/
  etcd::Client client_;
  etcd::Mirror mirror_;
  etcd::Election election_;
  common::CancellationScopePtr stop_;
  // Whether state records from the watch are applied (a follower) or are this leader's
  // own writes coming back.
  bool applying_ = true;
  int loops_ = 0;  // loops still running (Stop waits for them)
};

std::string EncodeMember(const Member& m);
std::optional<Member> DecodeMember(std::string_view bytes);

}  // namespace drover::server
