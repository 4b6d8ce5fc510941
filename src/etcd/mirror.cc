#include "etcd/mirror.h"

#include <algorithm>

namespace drover::etcd {

using namespace asio::experimental::awaitable_operators;  // NOLINT(google-build-using-namespace)

Mirror::Mirror(asio::any_io_executor executor, Client& client, common::Clock& clock,
               std::string prefix)
    : client_(client),
      clock_(clock),
      prefix_(std::move(prefix)),
      advanced_(executor, asio::steady_timer::time_point::max()) {}

void Mirror::Publish(std::vector<Change> changes, int64_t revision) {
  for (const Change& c : changes) {
    if (c.value)
      data_[c.key] = *c.value;
    else
      data_.erase(c.key);
  }
  for (const Listener& l : listeners_)
    l(changes, revision);
  revision_ = std::max(revision_, revision);
  advanced_.cancel();  // wakes every waiter; its expiry stays "never"
}

asio::awaitable<absl::Status> Mirror::Load() {
  RangeRequest request{.key = prefix_, .range_end = PrefixEnd(prefix_)};
  auto got = co_await client_.Range(std::move(request));
  if (!got.ok())
    co_return got.status();
  if (got->revision < revision_) {
    co_return absl::FailedPreconditionError(
        "etcd answered at revision " + std::to_string(got->revision) + ", older than the " +
        std::to_string(revision_) + " already served: restored from a backup, or another cluster");
  }
  if (got->more)
    co_return absl::InternalError("etcd cut a range without a limit short");
  std::vector<Change> changes;
  std::map<std::string, std::string> fresh;
  for (KeyValue& kv : got->kvs)
    fresh.emplace(std::move(kv.key), std::move(kv.value));
  for (const auto& [key, value] : data_) {
    if (!fresh.contains(key))
      changes.push_back({key, std::nullopt});
  }
  for (const auto& [key, value] : fresh) {
    auto it = data_.find(key);
    if (it == data_.end() || it->second != value)
      changes.push_back({key, value});
  }
  Publish(std::move(changes), std::max<int64_t>(got->revision, 1));
  co_return absl::OkStatus();
}

asio::awaitable<absl::Status> Mirror::Follow() {
  auto watch = co_await client_.WatchRange(prefix_, PrefixEnd(prefix_), revision_ + 1);
  if (!watch.ok())
    co_return watch.status();
  // A watch from the future would wait silently for revisions another history makes.
  if ((*watch)->created_at() < revision_) {
    co_return absl::FailedPreconditionError(
        "etcd is at revision " + std::to_string((*watch)->created_at()) + ", older than the " +
        std::to_string(revision_) + " already served: restored from a backup, or another cluster");
  }
  for (;;) {
    auto next = co_await (*watch)->Next();
    if (!next.ok())
      co_return next.status();
    std::vector<Change> changes;
    // With events, the copy reaches the last event's revision, not the header's: a
    // watch catching up sends older events under the store's current revision. A
    // message without events (progress) moves it to the header's.
    int64_t revision = next->events.empty() ? next->revision : 0;
    for (WatchEvent& e : next->events) {
      revision = std::max(revision, e.kv.mod_revision);
      if (e.type == WatchEvent::Type::kPut)
        changes.push_back({std::move(e.kv.key), std::move(e.kv.value)});
      else
        changes.push_back({std::move(e.kv.key), std::nullopt});
    }
    // A progress notification moves the revision without changes.
    if (!changes.empty() || revision > revision_)
      Publish(std::move(changes), revision);
  }
}

asio::awaitable<absl::Status> Mirror::Run() {
  common::Duration backoff = std::chrono::milliseconds(100);
  constexpr common::Duration kMaxBackoff = std::chrono::seconds(5);
  for (;;) {
    // Not a conditional around co_await: see GCC 12 in docs/development.md.
    absl::Status s;
    if (ready())
      s = co_await Follow();
    else
      s = co_await Load();
    if (absl::IsFailedPrecondition(s))
      co_return s;
    if (absl::IsOutOfRange(s)) {
      // Compacted past what we hold: load it all again, then follow from there.
      s = co_await Load();
      if (s.ok()) {
        ++reloads_;
        backoff = std::chrono::milliseconds(100);
        continue;
      }
      if (absl::IsFailedPrecondition(s))
        co_return s;
    }
    if (s.ok()) {
      backoff = std::chrono::milliseconds(100);
      continue;
    }
    co_await clock_.Sleep(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

asio::awaitable<bool> Mirror::WaitFor(int64_t revision, common::Duration max_wait) {
  const common::Time deadline = clock_.Now() + max_wait;
  while (revision_ < revision) {
    const common::Time now = clock_.Now();
    if (now >= deadline)
      co_return false;
    co_await (advanced_.async_wait(asio::as_tuple(asio::use_awaitable)) ||
              clock_.Sleep(deadline - now));
  }
  co_return true;
}

}  // namespace drover::etcd
