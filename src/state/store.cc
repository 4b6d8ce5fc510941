#include "state/store.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <unordered_set>
#include <utility>

#include <xxhash.h>

#include "common/event.h"

namespace drover::state {

namespace {

bool HasPrefix(std::string_view key, std::string_view prefix) {
  return key.substr(0, prefix.size()) == prefix;
}

// Erases every entry of `m` whose key starts with `prefix`.
template <typename Map>
void ErasePrefix(Map& m, std::string_view prefix) {
  auto it = m.lower_bound(prefix);
  while (it != m.end() && HasPrefix(it->first, prefix))
    it = m.erase(it);
}

}  // namespace

Store::Hash Store::HashOf(std::string_view bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return Hash{h.low64, h.high64};
}

Store::Store(std::unique_ptr<KvBackend> backend, StoreOptions options)
    : backend_(std::move(backend)),
      options_(options),
      notifier_([this] { NotifierLoop(); }),
      writer_([this] { WriterLoop(); }) {}

Store::~Store() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();  // commits what is queued, then tells the notifier it is done
  notifier_.join();
}

void Store::Put(std::string key, std::string value, Done done) {
  const Hash hash = HashOf(value);
  PutHashed(std::move(key), std::move(value), hash, std::move(done));
}

bool Store::IsCommittedLocked(const std::string& key, const Hash& hash) const {
  if (!options_.dedup || pending_.contains(key))
    return false;
  auto c = committed_.find(key);
  return c != committed_.end() && c->second == hash;
}

bool Store::SettledAsDuplicate(const std::string& key, const Hash& hash) {
  std::lock_guard lock(mu_);
  if (!IsCommittedLocked(key, hash))
    return false;
  ++stats_.writes;
  ++stats_.deduplicated;
  return true;
}

void Store::PutHashed(std::string key, std::string value, const Hash& hash, Done done) {
  bool duplicate = false;
  bool follower = false;
  {
    std::lock_guard lock(mu_);
    ++stats_.writes;
    if (options_.dedup) {
      // The latest value this key will have: the last queued write, else the last
      // committed one.
      if (auto p = pending_.find(key); p != pending_.end()) {
        // The same bytes are queued but not yet on disk: no write of our own; the
        // caller learns that write's outcome from its batch, which a follower queued
        // behind it now is sure to share (TakeBatchLocked takes it with its write).
        // Once that write is being committed, a new write is queued instead.
        if (p->second.hash == hash && options_.batch && p->second.seq > taken_seq_) {
          ++stats_.deduplicated;
          Queued q;
          q.done = std::move(done);
          q.barrier = true;
          q.follower = true;
          q.leader_seq = p->second.seq;
          queue_.push_back(std::move(q));
          ++queued_followers_;
          done = nullptr;
          duplicate = true;
          follower = true;
        }
      } else if (IsCommittedLocked(key, hash)) {
        ++stats_.deduplicated;
        duplicate = true;
      }
    }
  }
  if (duplicate) {
    if (follower)
      wake_.notify_one();  // the writer answers it with its batch
    if (done)
      done(absl::OkStatus());  // already durable: nothing to wait for
    return;
  }
  Enqueue(KvOp{KvOp::Kind::kPut, std::move(key), std::move(value)}, hash, std::move(done));
}

void Store::Delete(std::string key, Done done) {
  {
    std::lock_guard lock(mu_);
    ++stats_.writes;
  }
  Enqueue(KvOp{KvOp::Kind::kDelete, std::move(key), {}}, std::nullopt, std::move(done));
}

void Store::DeletePrefix(std::string prefix, Done done) {
  {
    std::lock_guard lock(mu_);
    ++stats_.writes;
  }
  Enqueue(KvOp{KvOp::Kind::kDeletePrefix, std::move(prefix), {}}, std::nullopt, std::move(done));
}

void Store::PutEncoded(std::string key, Encoder encode, Done done) {
  {
    std::lock_guard lock(mu_);
    ++stats_.writes;
  }
  // Queued with no hash: until the writer knows the bytes, no put of this key is
  // deduplicated against an older value.
  Enqueue(KvOp{KvOp::Kind::kPut, std::move(key), {}}, std::nullopt, std::move(done),
          std::move(encode));
}

void Store::Flush(Done done) {
  {
    std::lock_guard lock(mu_);
    Queued q;
    q.done = std::move(done);
    q.barrier = true;
    queue_.push_back(std::move(q));
  }
  wake_.notify_one();
}

asio::awaitable<void> Store::FlushAsync() {
  std::function<void(Done)> fn = [this](Done d) { Flush(std::move(d)); };
  (void)co_await Await(std::move(fn));
}

void Store::Enqueue(KvOp op, std::optional<Hash> hash, Done done, Encoder encode) {
  {
    std::lock_guard lock(mu_);
    const uint64_t seq = next_seq_++;
    // What each affected key will be once this is committed: a later Put of the same
    // bytes as a deleted key must not be mistaken for a duplicate.
    if (op.kind == KvOp::Kind::kDeletePrefix) {
      for (auto it = committed_.lower_bound(op.key);
           it != committed_.end() && HasPrefix(it->first, op.key); ++it) {
        pending_[it->first] = Pending{std::nullopt, seq};
      }
      for (auto it = pending_.lower_bound(op.key);
           it != pending_.end() && HasPrefix(it->first, op.key); ++it) {
        it->second = Pending{std::nullopt, seq};
      }
    } else {
      pending_[op.key] = Pending{hash, seq};
    }
    Queued q{std::move(op), hash, seq, std::move(done)};
    q.encode = std::move(encode);
    queue_.push_back(std::move(q));
  }
  wake_.notify_one();
}

void Store::WriterLoop() {
  for (;;) {
    std::vector<Queued> batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        // Stopping, and everything queued is committed.
        {
          std::lock_guard done_lock(done_mu_);
          writer_done_ = true;
        }
        done_wake_.notify_one();
        return;
      }
      TakeBatchLocked(batch);
    }
    EncodeDeferred(batch);
    std::vector<KvOp> ops;
    ops.reserve(batch.size());
    bool settles = false;  // anything but barriers
    for (Queued& q : batch) {
      if (q.barrier)
        continue;
      settles = true;
      if (!q.dropped && !q.error)  // the value moves: Apply needs only the key
        ops.push_back(KvOp{q.op.kind, q.op.key, std::move(q.op.value)});
    }
    // A batch of barriers (or of dropped writes) alone has nothing to commit.
    const auto started = std::chrono::steady_clock::now();
    const absl::Status status = ops.empty() ? absl::OkStatus() : backend_->Commit(ops);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (settles)
      Apply(batch, status, !ops.empty(), took);
    {
      std::lock_guard done_lock(done_mu_);
      done_queue_.emplace_back(std::move(batch), status);
    }
    done_wake_.notify_one();
  }
}

void Store::TakeBatchLocked(std::vector<Queued>& batch) {
  if (!options_.batch) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  } else {
    const size_t limit = std::max<size_t>(options_.max_batch_writes, 1);
    size_t writes = 0;
    while (!queue_.empty() && (queue_.front().barrier || writes < limit)) {
      writes += queue_.front().barrier ? 0 : 1;
      queued_followers_ -= queue_.front().follower ? 1 : 0;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  for (const Queued& q : batch)
    taken_seq_ = std::max(taken_seq_, q.seq);
  // A follower shares its write's outcome, so it goes in that write's batch (it was
  // queued later, possibly beyond the cut). It carries no op: the transaction's size
  // is unchanged. The scan holds mu_, which callers on the control loop take too: it
  // runs only while followers are queued (rarely: a put equal to a queued one).
  for (auto it = queue_.begin(); queued_followers_ > 0 && it != queue_.end();) {
    if (it->follower && it->leader_seq <= taken_seq_) {
      --queued_followers_;
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
}

void Store::EncodeDeferred(std::vector<Queued>& batch) {
  bool any = false;
  for (Queued& q : batch) {
    if (!q.encode)
      continue;
    any = true;
    try {
      q.op.value = q.encode();
      q.hash = HashOf(q.op.value);
    } catch (const std::exception& e) {
      q.error = absl::InternalError(std::string("encoding the record failed: ") + e.what());
    } catch (...) {
      q.error = absl::InternalError("encoding the record failed");
    }
  }
  if (any) {
    // Counted as a failed commit's writes are: Flush callers watch this count.
    std::lock_guard lock(mu_);
    for (const Queued& q : batch)
      stats_.failed += q.error ? 1 : 0;
  }
  if (any && options_.dedup) {
    // An encoded put is dropped only when the key's latest value is the committed one:
    // no earlier write of this batch touches the key.
    std::unordered_set<std::string_view> written;
    std::vector<std::string_view> deleted_prefixes;
    std::lock_guard lock(mu_);
    for (Queued& q : batch) {
      if (q.barrier || q.error)
        continue;
      const std::string_view key = q.op.key;
      if (q.op.kind == KvOp::Kind::kDeletePrefix) {
        deleted_prefixes.push_back(key);
        continue;
      }
      const bool touched =
          written.contains(key) ||
          std::any_of(deleted_prefixes.begin(), deleted_prefixes.end(),
                      [key](std::string_view prefix) { return HasPrefix(key, prefix); });
      if (q.encode && !touched) {
        if (auto c = committed_.find(key); c != committed_.end() && c->second == *q.hash) {
          // The key keeps its committed value: a later put of it in this batch may be
          // dropped the same way.
          q.dropped = true;
          ++stats_.deduplicated;
          continue;
        }
      }
      written.insert(key);
    }
  }
  for (Queued& q : batch)
    q.encode = nullptr;  // what it holds is released now, not after the commit
}

void Store::NotifierLoop() {
  for (;;) {
    std::deque<std::pair<std::vector<Queued>, absl::Status>> ready;
    {
      std::unique_lock lock(done_mu_);
      done_wake_.wait(lock, [this] { return writer_done_ || !done_queue_.empty(); });
      if (done_queue_.empty())
        return;  // the writer has stopped and every caller has been told
      ready.swap(done_queue_);
    }
    for (auto& [batch, status] : ready) {
      for (Queued& q : batch) {
        if (!q.done)
          continue;
        // A barrier only settles, as does a write dropped as committed already; a
        // follower shares its batch's outcome.
        if (q.error)
          q.done(*q.error);
        else if ((q.barrier && !q.follower) || q.dropped)
          q.done(absl::OkStatus());
        else
          q.done(status);
      }
    }
  }
}

void Store::Apply(const std::vector<Queued>& batch, const absl::Status& status, bool committed,
                  double commit_seconds) {
  std::lock_guard lock(mu_);
  if (committed) {
    ++stats_.transactions;
    stats_.commit_seconds += commit_seconds;
    if (!status.ok())
      ++stats_.failed;
  }
  for (const Queued& q : batch) {
    if (q.barrier)
      continue;
    if (status.ok() && !q.dropped && !q.error) {
      // Published only now that the bytes are on disk.
      switch (q.op.kind) {
        case KvOp::Kind::kPut:
          committed_[q.op.key] = *q.hash;
          break;
        case KvOp::Kind::kDelete:
          committed_.erase(q.op.key);
          break;
        case KvOp::Kind::kDeletePrefix:
          ErasePrefix(committed_, q.op.key);
          break;
      }
    }
    // The queued state of a key is settled unless a later write of it is still queued.
    auto settle = [&](auto it) {
      return it->second.seq <= q.seq ? pending_.erase(it) : std::next(it);
    };
    if (q.op.kind == KvOp::Kind::kDeletePrefix) {
      for (auto it = pending_.lower_bound(q.op.key);
           it != pending_.end() && HasPrefix(it->first, q.op.key);) {
        it = settle(it);
      }
    } else if (auto it = pending_.find(q.op.key); it != pending_.end()) {
      settle(it);
    }
  }
}

StoreStats Store::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

asio::awaitable<absl::Status> Store::Await(std::function<void(Done)> start) {
  // The completion may run on the writer thread: hand the result back to the caller's
  // executor, where the event lives.
  auto executor = co_await asio::this_coro::executor;
  auto done = std::make_shared<common::Event>(executor);
  auto result = std::make_shared<absl::Status>();
  start([executor, done, result](absl::Status s) {
    asio::post(executor, [done, result, s = std::move(s)]() mutable {
      *result = std::move(s);
      done->Set();
    });
  });
  co_await done->Wait();
  co_return *result;
}

asio::awaitable<absl::Status> Store::PutAsync(std::string key, std::string value) {
  // The bytes already committed for the key: durable, so answered without suspending
  // (a runner rewriting unchanged state costs a hash and a map lookup).
  const Hash hash = HashOf(value);
  if (SettledAsDuplicate(key, hash))
    co_return absl::OkStatus();
  auto start = [this, key = std::move(key), value = std::move(value), hash](Done d) mutable {
    PutHashed(std::move(key), std::move(value), hash, std::move(d));
  };
  std::function<void(Done)> fn = std::move(start);  // named: see GCC 12 in development.md
  co_return co_await Await(std::move(fn));
}

asio::awaitable<absl::Status> Store::PutEncodedAsync(std::string key, Encoder encode) {
  auto start = [this, key = std::move(key), encode = std::move(encode)](Done d) mutable {
    PutEncoded(std::move(key), std::move(encode), std::move(d));
  };
  std::function<void(Done)> fn = std::move(start);  // named: see GCC 12 in development.md
  co_return co_await Await(std::move(fn));
}

asio::awaitable<absl::Status> Store::DeleteAsync(std::string key) {
  auto start = [this, key = std::move(key)](Done d) mutable {
    Delete(std::move(key), std::move(d));
  };
  std::function<void(Done)> fn = std::move(start);  // named: see GCC 12 in development.md
  co_return co_await Await(std::move(fn));
}

asio::awaitable<absl::Status> Store::DeletePrefixAsync(std::string prefix) {
  auto start = [this, prefix = std::move(prefix)](Done d) mutable {
    DeletePrefix(std::move(prefix), std::move(d));
  };
  std::function<void(Done)> fn = std::move(start);  // named: see GCC 12 in development.md
  co_return co_await Await(std::move(fn));
}

}  // namespace drover::state
