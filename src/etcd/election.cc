#include "etcd/election.h"

#include <algorithm>
#include <vector>

namespace drover::etcd {

Compare Fence(const std::string& key, const Term& term) {
  return Compare{.key = key,
                 .target = Compare::Target::kCreateRevision,
                 .result = Compare::Result::kEqual,
                 .number = term.revision};
}

Election::Election(Client& client, common::Clock& clock, std::string key, std::string id,
                   int64_t lease_ttl_seconds)
    : client_(client),
      clock_(clock),
      key_(std::move(key)),
      id_(std::move(id)),
      ttl_seconds_(lease_ttl_seconds) {}

asio::awaitable<absl::StatusOr<std::optional<Term>>> Election::TryOnce(int64_t& seen_revision) {
  // The lease lives at most TTL from when it was asked for: a bound that holds whatever
  // the answer's delay.
  const common::Time asked = clock_.Now();
  auto lease = co_await client_.GrantLease(ttl_seconds_);
  if (!lease.ok())
    co_return lease.status();
  // Named, not braced lists inside co_await: see GCC 12 in docs/development.md.
  std::vector<Compare> vacant = {
      Compare{.key = key_, .target = Compare::Target::kCreateRevision, .number = 0}};
  std::vector<Op> take = {Op::Put(key_, id_, lease->id), Op::Get(key_)};
  std::vector<Op> read = {Op::Get(key_)};
  auto txn = co_await client_.Txn(std::move(vacant), std::move(take), std::move(read));
  if (!txn.ok() || !txn->succeeded) {
    // Not ours: the lease would only expire unused.
    (void)co_await client_.RevokeLease(lease->id);
    if (!txn.ok())
      co_return txn.status();
    seen_revision = txn->revision;
    co_return std::optional<Term>();
  }
  if (txn->ranges.empty() || txn->ranges[0].kvs.empty())
    co_return absl::InternalError("etcd: the leader key vanished in its own transaction");
  co_return std::optional<Term>(Term{.lease_id = lease->id,
                                     .revision = txn->ranges[0].kvs[0].create_revision,
                                     .valid_until = asked + std::chrono::seconds(ttl_seconds_)});
}

asio::awaitable<absl::Status> Election::WaitForVacancy(int64_t revision) {
  std::string key_only;  // named, not a temporary inside co_await
  auto watch = co_await client_.WatchRange(key_, std::move(key_only), revision + 1);
  if (!watch.ok())
    co_return watch.status();
  for (;;) {
    auto next = co_await (*watch)->Next();
    if (!next.ok())
      co_return next.status();
    for (const WatchEvent& e : next->events) {
      if (e.type == WatchEvent::Type::kDelete)
        co_return absl::OkStatus();
    }
  }
}

asio::awaitable<absl::StatusOr<Term>> Election::Campaign() {
  const common::Duration max_backoff = std::chrono::seconds(ttl_seconds_);
  common::Duration backoff = std::chrono::milliseconds(100);
  for (;;) {
    int64_t seen = 0;
    auto attempt = co_await TryOnce(seen);
    absl::Status s = attempt.status();
    if (attempt.ok()) {
      if (attempt->has_value())
        co_return **attempt;
      // Someone leads: wait until the key goes. However the watch ends (a member
      // going away, a compaction), try again: only this candidate's own attempt can
      // fail for good.
      s = co_await WaitForVacancy(seen);
      if (s.ok()) {
        backoff = std::chrono::milliseconds(100);
        continue;
      }
      s = absl::UnavailableError(s.message());
    }
    if (!absl::IsUnavailable(s))
      co_return s;
    co_await clock_.Sleep(backoff);
    backoff = std::min(backoff * 2, max_backoff);
  }
}

asio::awaitable<absl::Status> Election::Hold(Term term) {
  using namespace asio::experimental::awaitable_operators;  // NOLINT
  const common::Duration ttl = std::chrono::seconds(ttl_seconds_);
  const common::Duration period =
      std::max<common::Duration>(ttl / 3, std::chrono::milliseconds(100));
  // The lease is known to live until `valid_until`: TTL from when the last refresh that
  // succeeded was sent. Past it, this candidate no longer counts itself leader, whether
  // or not a refresh is still on its way.
  common::Time valid_until = term.valid_until;
  for (;;) {
    co_await clock_.Sleep(std::min(
        period, std::max<common::Duration>(valid_until - clock_.Now(), common::Duration(0))));
    const common::Time sent = clock_.Now();
    if (sent >= valid_until)
      co_return absl::AbortedError("leadership lost: the lease could not be refreshed in time");
    auto refresh = client_.KeepAlive(term.lease_id);
    auto expiry = clock_.Sleep(valid_until - sent);
    auto r = co_await (std::move(refresh) || std::move(expiry));
    if (r.index() == 1)
      co_return absl::AbortedError("leadership lost: the lease could not be refreshed in time");
    const absl::StatusOr<int64_t>& refreshed = std::get<0>(r);
    if (refreshed.ok()) {
      valid_until = sent + std::chrono::seconds(*refreshed);
      continue;
    }
    if (absl::IsNotFound(refreshed.status()))
      co_return absl::AbortedError("leadership lost: the lease expired");
    // Unreachable for now: try again while the lease is known to live.
  }
}

asio::awaitable<absl::Status> Election::Resign(Term term) {
  absl::Status s = co_await client_.RevokeLease(term.lease_id);
  // A lease already gone is resigned.
  co_return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

asio::awaitable<absl::StatusOr<std::string>> Election::Leader() {
  RangeRequest request{.key = key_};
  auto got = co_await client_.Range(std::move(request));
  if (!got.ok())
    co_return got.status();
  co_return got->kvs.empty() ? std::string() : got->kvs[0].value;
}

}  // namespace drover::etcd
