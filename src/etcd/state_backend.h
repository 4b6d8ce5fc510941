// The servers' state in etcd, as a state::KvBackend: what a leader's StateStore writes
// through (docs/ha.md). Keys live under `<prefix>/state/`; every commit is sent as etcd
// transactions fenced by the leader's term (election.h), so a leader that lost its
// lease, knowing it or not, cannot write: its commit fails with FailedPrecondition.
//
// Writes of a key that a later write of it in the same transaction replaces are dropped
// (etcd refuses a transaction that names a key twice). etcd bounds a transaction (--max-txn-ops,
// 128 by default, and --max-request-bytes, 1.5 MiB): a commit larger than `max_ops` operations or
// `max_bytes` of keys and values is sent as several transactions, in order, each fenced. A leader
// that dies between them leaves the first ones written: a prefix of its writes in their order,
// which is what its successor would have seen had it died a moment earlier. After a
// failed commit the backend sends nothing more (a later one would leave a gap).
//
// Commit, Get and Scan block their thread (the state::Store's writer, or the pool) on a
// private io_context; they never run on the control loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/election.h"
#include "state/kv_backend.h"

namespace drover::etcd {

struct StateBackendOptions {
  std::vector<std::string> endpoints;
  std::string prefix;  // the cluster's prefix, e.g. "/drover"; keys go under <prefix>/state/
  std::string leader_key;
  Term term;
  size_t max_ops = 128;
  size_t max_bytes = 768 * 1024;  // raw bytes: base64 in the gateway's JSON adds a third
  common::Duration call_timeout = std::chrono::seconds(5);
  // Called (on the writer's thread) when a commit fails, fenced or not: the leader's
  // memory is then ahead of etcd, and it must give up its term.
  std::function<void()> on_failure;
};

// Where the servers' state lives under a cluster prefix.
std::string StatePrefix(std::string_view prefix);

class StateBackend final : public state::KvBackend {
 public:
  explicit StateBackend(StateBackendOptions options);

  std::string Name() const override { return "etcd"; }
  absl::Status Commit(const std::vector<state::KvOp>& ops) override;
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override;
  absl::StatusOr<state::KvPairs> Scan(std::string_view prefix) override;

  // `ops` as transactions etcd takes (no key twice, no write under a prefix the same
  // transaction deletes, at most `max_ops` and about `max_bytes`), in order.
  static std::vector<std::vector<state::KvOp>> Chunks(const std::vector<state::KvOp>& ops,
                                                      size_t max_ops, size_t max_bytes);

  // Transactions sent (a commit may take several).
  uint64_t transactions() const { return transactions_.load(); }

 private:
  absl::Status CommitChunk(Client& client, const std::vector<state::KvOp>& ops, size_t begin,
                           size_t end);

  StateBackendOptions options_;
  std::string state_prefix_;
  std::atomic<uint64_t> transactions_{0};
  // The writer thread's alone (Commit): one client for the term, so that an endpoint
  // that failed is not tried first again; and the first failure, after which nothing
  // more is sent.
  Client client_;
  absl::Status failure_;
};

}  // namespace drover::etcd
