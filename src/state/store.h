// The client state DB's write path (DESIGN.md §5): write deduplication and group
// commit over a KvBackend.
//
// Deduplication: the Store remembers an XXH3-128 hash of the bytes last committed for
// each key (and of the latest write still queued). A Put whose bytes hash to the
// latest known value of the key is dropped before any transaction exists: an
// unchanged write costs no transaction and no sync. Hashes become "committed" only
// after the commit succeeded; a failed commit forgets the queued ones, so the same
// write is tried again; a delete (or a deleted prefix) forgets them too.
//
// Group commit: one writer thread takes the queued writes (up to max_batch_writes) and
// commits them as one transaction (one sync), in the order they were queued; a put
// deduplicated against a queued write goes with that write. A notifier thread then tells
// each caller, in commit order, while the writer goes on with the next batch. With
// `batch = false` (the benchmark's baseline) each write is its own transaction.
//
// Deferred encoding: `PutEncoded` queues a function that produces the bytes, and the
// writer calls it when it takes the write, in queue order, before the commit. The
// caller's thread (the control loop) then spends nothing on serialising and
// compressing a record. Such a write is deduplicated on the writer, against what is
// committed, unless an earlier write in the same batch touches the key.
//
// Thread-safe. Completions run on the notifier thread (or on the caller's, at once,
// for a plain put deduplicated when it is made); `PutAsync` and friends resume the
// caller on its executor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/asio.h"
#include "state/kv_backend.h"

namespace drover::state {

struct StoreOptions {
  bool dedup = true;
  bool batch = true;
  // The most writes (puts and deletes; flushes and deduplicated puts not counted) one
  // transaction takes; what is queued beyond waits for the next. LMDB keeps a copy of
  // every page its largest transaction dirtied for as long as it is open (its cache of
  // dirty pages), and the pages a commit frees are reused only two commits later (the
  // file grows by them), so this bounds that memory: a burst of 1,000 allocations in one
  // transaction left 6 MB behind; with 1,000 tasks started at once, the agent's RSS was
  // 2 MiB smaller with 128 than with 256 (64: 3 MiB), and the burst no slower.
  size_t max_batch_writes = 128;
};

struct StoreStats {
  uint64_t writes = 0;        // Put/PutEncoded/Delete/DeletePrefix calls
  uint64_t deduplicated = 0;  // puts dropped as unchanged
  uint64_t transactions = 0;  // commits (each one sync)
  uint64_t failed = 0;        // commits that failed, and puts whose encoder failed
  double commit_seconds = 0;  // spent in the backend's Commit (writes and syncs)
};

class Store {
 public:
  using Done = std::function<void(absl::Status)>;
  // Produces a put's bytes on the writer thread: it may read only what it owns (copies,
  // pointers to immutable objects). An exception fails that write alone.
  using Encoder = std::function<std::string()>;

  Store(std::unique_ptr<KvBackend> backend, StoreOptions options = {});
  // Commits what is queued, then stops the writer.
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Queue a write; `done` (may be empty) learns when it is durable or failed.
  void Put(std::string key, std::string value, Done done = nullptr);
  void Delete(std::string key, Done done = nullptr);
  void DeletePrefix(std::string prefix, Done done = nullptr);
  // A put whose bytes `encode` makes on the writer thread (see above).
  void PutEncoded(std::string key, Encoder encode, Done done = nullptr);

  // The same, awaited on the caller's executor (the control loop).
  asio::awaitable<absl::Status> PutAsync(std::string key, std::string value);
  asio::awaitable<absl::Status> PutEncodedAsync(std::string key, Encoder encode);
  asio::awaitable<absl::Status> DeleteAsync(std::string key);
  asio::awaitable<absl::Status> DeletePrefixAsync(std::string prefix);

  // A barrier: `done` runs once every write queued before it is settled (committed or
  // failed; their own callbacks report which). Costs no transaction of its own.
  void Flush(Done done);
  asio::awaitable<void> FlushAsync();

  // Reads see committed data only.
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) {
    return backend_->Get(key);
  }
  absl::StatusOr<KvPairs> Scan(std::string_view prefix) { return backend_->Scan(prefix); }

  StoreStats stats() const;
  const KvBackend& backend() const { return *backend_; }

 private:
  struct Hash {
    uint64_t low = 0;
    uint64_t high = 0;
    friend bool operator==(const Hash&, const Hash&) = default;
  };
  // The latest queued write of a key: its hash (nullopt: deleted) and sequence number.
  struct Pending {
    std::optional<Hash> hash;
    uint64_t seq = 0;
  };
  struct Queued {
    KvOp op;
    std::optional<Hash> hash;  // of a put's value
    uint64_t seq = 0;
    Done done;
    bool barrier = false;               // Flush: no op, only `done`
    bool follower = false;              // a put deduplicated against a queued write: its outcome
    uint64_t leader_seq = 0;            // a follower's: that write's seq
    Encoder encode;                     // PutEncoded: makes op.value on the writer
    bool dropped = false;               // an encoded put equal to what is committed: nothing to do
    std::optional<absl::Status> error;  // the encoder failed: this write alone fails
  };

  void PutHashed(std::string key, std::string value, const Hash& hash, Done done);
  // mu_ held: `hash` is what `key` has on disk and no write of it is queued.
  bool IsCommittedLocked(const std::string& key, const Hash& hash) const;
  // A put of the committed bytes, counted as written and deduplicated: nothing to do.
  bool SettledAsDuplicate(const std::string& key, const Hash& hash);
  void Enqueue(KvOp op, std::optional<Hash> hash, Done done, Encoder encode = nullptr);
  void WriterLoop();
  // mu_ held: moves the next batch from the queue into `batch`.
  void TakeBatchLocked(std::vector<Queued>& batch);
  // Runs the batch's encoders, then drops the puts whose bytes are already committed.
  void EncodeDeferred(std::vector<Queued>& batch);
  void NotifierLoop();
  // Settles the batch's writes; `committed`: a transaction was made (and took
  // `commit_seconds`).
  void Apply(const std::vector<Queued>& batch, const absl::Status& status, bool committed,
             double commit_seconds);
  static Hash HashOf(std::string_view bytes);
  asio::awaitable<absl::Status> Await(std::function<void(Done)> start);

  std::unique_ptr<KvBackend> backend_;
  const StoreOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Queued> queue_;
  std::map<std::string, Hash, std::less<>> committed_;
  std::map<std::string, Pending, std::less<>> pending_;
  uint64_t next_seq_ = 1;
  uint64_t taken_seq_ = 0;       // the newest write the writer has taken from the queue
  size_t queued_followers_ = 0;  // followers in queue_: the writer looks for them only then
  bool stopping_ = false;
  StoreStats stats_;
  // Committed batches whose callers are still to be told, in commit order. A second
  // thread tells them, so that the writer starts the next commit at once: waking
  // dozens of waiting callers takes a good part of a commit's time.
  std::mutex done_mu_;
  std::condition_variable done_wake_;
  std::deque<std::pair<std::vector<Queued>, absl::Status>> done_queue_;
  bool writer_done_ = false;
  std::thread notifier_;
  std::thread writer_;
};

}  // namespace drover::state
