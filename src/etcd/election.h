// Leadership through etcd: one key held under a lease. A candidate campaigns by
// creating the key under its own lease when it does not exist (one transaction), and
// otherwise waits (a watch) until the key is deleted: its holder resigned or its lease
// expired. The leader keeps its lease alive; once a refresh finds the lease gone, or
// no refresh succeeds for a whole TTL, leadership is lost.
//
// A leader's writes are fenced: Fence(term) is a comparison that the key still exists
// with the create revision this leader got, so a deposed leader that does not know it
// yet cannot write. Coroutines on the caller's control loop; the Client is shared.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

#include "common/asio.h"
#include "common/clock.h"
#include "etcd/client.h"

namespace drover::etcd {

// One leader's tenure.
struct Term {
  int64_t lease_id = 0;
  int64_t revision = 0;  // the create revision of the leader key: unique per term
  // Until when the lease surely lives (TTL from when it was asked for). Hold moves it
  // forward with each refresh.
  common::Time valid_until{};
};

// The comparison that fences a write by `term`'s leader.
Compare Fence(const std::string& key, const Term& term);

class Election {
 public:
  // `key`: the leader key ("<prefix>/leader"); `id`: what the key holds while this
  // candidate leads (its name or address). `clock`, `client` must outlive it.
  Election(Client& client, common::Clock& clock, std::string key, std::string id,
           int64_t lease_ttl_seconds);

  // Returns once this candidate leads. Errors other than etcd being unreachable
  // (retried with backoff, from 100 ms doubling to the TTL) end it.
  asio::awaitable<absl::StatusOr<Term>> Campaign();
  // Keeps the term's lease alive until leadership is lost (the Status says how) or the
  // caller cancels it. Refreshes every third of the TTL; leadership counts as lost once
  // no refresh succeeded within the TTL of the last one sent, even if etcd might still
  // hold the lease (writes are fenced either way).
  asio::awaitable<absl::Status> Hold(Term term);
  // Gives up the term at once: the key goes with the lease.
  asio::awaitable<absl::Status> Resign(Term term);
  // Who leads now: the key's value ("" when nobody does).
  asio::awaitable<absl::StatusOr<std::string>> Leader();

  const std::string& key() const { return key_; }

 private:
  // One attempt: the term, or nullopt with the revision at which the key was read.
  asio::awaitable<absl::StatusOr<std::optional<Term>>> TryOnce(int64_t& seen_revision);
  // Until the key is deleted after `revision`, or the watch breaks.
  asio::awaitable<absl::Status> WaitForVacancy(int64_t revision);

  Client& client_;
  common::Clock& clock_;
  std::string key_;
  std::string id_;
  int64_t ttl_seconds_;
};

}  // namespace drover::etcd
