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
  co_return std::optional<Term>(Term{lease->id, txn->ranges[0].kvs[0].create_revision});
}

asio::awaitable<absl::Status> Election::WaitForVacancy(int64_t revision) {
  auto watch = co_await client_.WatchRange(key_, "", revision + 1);
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
      // Someone leads: wait until the key goes. A broken watch just tries again.
      s = co_await WaitForVacancy(seen);
      if (s.ok() || absl::IsOutOfRange(s)) {
        backoff = std::chrono::milliseconds(100);
        continue;
      }
    }
    if (!absl::IsUnavailable(s))
      co_return s;
    co_await clock_.Sleep(backoff);
    backoff = std::min(backoff * 2, max_backoff);
  }
}

asio::awaitable<absl::Status> Election::Hold(Term term) {
  const common::Duration ttl = std::chrono::seconds(ttl_seconds_);
  const common::Duration period =
      std::max<common::Duration>(ttl / 3, std::chrono::milliseconds(100));
  common::Time last_refresh = clock_.Now();
  for (;;) {
    co_await clock_.Sleep(period);
    auto refreshed = co_await client_.KeepAlive(term.lease_id);
    if (refreshed.ok()) {
      last_refresh = clock_.Now();
      continue;
    }
    if (absl::IsNotFound(refreshed.status()))
      co_return absl::AbortedError("leadership lost: the lease expired");
    if (clock_.Now() - last_refresh >= ttl) {
      co_return absl::AbortedError("leadership lost: the lease could not be refreshed for " +
                                   std::to_string(ttl_seconds_) + " s (" +
                                   std::string(refreshed.status().message()) + ")");
    }
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
