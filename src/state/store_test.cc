// The state DB's storage layer: one conformance suite over every backend, write
// deduplication and group commit, persistence, and crash safety under SIGKILL.
#include "state/store.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <random>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "state/lmdb_backend.h"
#include "testing/test_util.h"

namespace drover::state {
namespace {

namespace fs = std::filesystem;

// Waits for a queued write (through its completion) and returns its status.
absl::Status Sync(const std::function<void(Store::Done)>& write) {
  std::promise<absl::Status> p;
  auto f = p.get_future();
  write([&p](absl::Status s) { p.set_value(std::move(s)); });
  return f.get();
}

absl::Status PutSync(Store& s, const std::string& k, const std::string& v) {
  return Sync([&](Store::Done d) { s.Put(k, v, std::move(d)); });
}

std::string Value(Store& s, const std::string& k) {
  auto v = s.Get(k);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() && v->has_value() ? **v : "<none>";
}

class StoreConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<KvBackend> Backend() {
    if (GetParam() == "memory")
      return NewMemoryBackend();
    auto b = OpenLmdb(dir_.path() / "state.db");
    EXPECT_TRUE(b.ok()) << b.status();
    return std::move(*b);
  }
  testing::TempDir dir_;
};

TEST_P(StoreConformanceTest, PutGetScanDeleteAndDeletePrefix) {
  Store s(Backend());
  EXPECT_EQ(s.backend().Name(), GetParam());
  ASSERT_TRUE(PutSync(s, "allocations/a1/alloc", "A1").ok());
  ASSERT_TRUE(PutSync(s, "allocations/a1/task-web/local_state", "L").ok());
  ASSERT_TRUE(PutSync(s, "allocations/a2/alloc", "A2").ok());
  ASSERT_TRUE(PutSync(s, "allocations/a10/alloc", "A10").ok());
  EXPECT_EQ(Value(s, "allocations/a1/alloc"), "A1");
  EXPECT_EQ(Value(s, "nope"), "<none>");
  auto all = s.Scan("allocations/");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ(s.Scan("")->size(), 4u);                   // everything
  EXPECT_EQ((*all)[0].first, "allocations/a1/alloc");  // key order
  // Deleting an alloc's prefix removes everything under it, and only that.
  ASSERT_TRUE(Sync([&](Store::Done d) { s.DeletePrefix("allocations/a1/", std::move(d)); }).ok());
  EXPECT_EQ(s.Scan("allocations/a1/")->size(), 0u);
  EXPECT_EQ(Value(s, "allocations/a10/alloc"), "A10");
  ASSERT_TRUE(Sync([&](Store::Done d) { s.Delete("allocations/a2/alloc", std::move(d)); }).ok());
  ASSERT_TRUE(Sync([&](Store::Done d) { s.Delete("never-there", std::move(d)); }).ok());
  EXPECT_EQ(Value(s, "allocations/a2/alloc"), "<none>");
}

TEST_P(StoreConformanceTest, IdenticalPutsOpenNoTransaction) {
  Store s(Backend());
  ASSERT_TRUE(PutSync(s, "k", "v1").ok());
  const uint64_t txns = s.stats().transactions;
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(PutSync(s, "k", "v1").ok());
  EXPECT_EQ(s.stats().transactions, txns);
  EXPECT_EQ(s.stats().deduplicated, 100u);
  ASSERT_TRUE(PutSync(s, "k", "v2").ok());
  EXPECT_EQ(s.stats().transactions, txns + 1);
  EXPECT_EQ(Value(s, "k"), "v2");
}

TEST_P(StoreConformanceTest, DeleteThenIdenticalPutIsWritten) {
  Store s(Backend());
  ASSERT_TRUE(PutSync(s, "b/k", "v").ok());
  ASSERT_TRUE(Sync([&](Store::Done d) { s.Delete("b/k", std::move(d)); }).ok());
  ASSERT_TRUE(PutSync(s, "b/k", "v").ok());
  EXPECT_EQ(Value(s, "b/k"), "v");
  ASSERT_TRUE(Sync([&](Store::Done d) { s.DeletePrefix("b/", std::move(d)); }).ok());
  ASSERT_TRUE(PutSync(s, "b/k", "v").ok());
  EXPECT_EQ(Value(s, "b/k"), "v");
  EXPECT_EQ(s.stats().deduplicated, 0u);
}

// A put identical to the committed value, queued behind a different one for the same
// key, must still be written: the key's latest value is the queued one.
TEST_P(StoreConformanceTest, DedupComparesWithTheLatestQueuedValue) {
  Store s(Backend());
  ASSERT_TRUE(PutSync(s, "k", "old").ok());
  std::promise<void> a, b;
  s.Put("k", "new", [&](absl::Status) { a.set_value(); });
  s.Put("k", "old", [&](absl::Status) { b.set_value(); });
  a.get_future().wait();
  b.get_future().wait();
  EXPECT_EQ(Value(s, "k"), "old");
}

absl::Status PutEncodedSync(Store& s, const std::string& k, Store::Encoder encode) {
  return Sync([&](Store::Done d) { s.PutEncoded(k, std::move(encode), std::move(d)); });
}

TEST_P(StoreConformanceTest, EncodedPutsRunOnTheWriterInQueueOrder) {
  Store s(Backend());
  std::thread::id encoded_on;
  s.PutEncoded("k", [&encoded_on] {
    encoded_on = std::this_thread::get_id();
    return std::string("1");
  });
  ASSERT_TRUE(PutSync(s, "k", "2").ok());
  EXPECT_EQ(Value(s, "k"), "2");  // the plain put queued after it wins
  ASSERT_TRUE(PutEncodedSync(s, "k", [] { return std::string("3"); }).ok());
  EXPECT_EQ(Value(s, "k"), "3");
  EXPECT_NE(encoded_on, std::thread::id());
  EXPECT_NE(encoded_on, std::this_thread::get_id());
}

TEST_P(StoreConformanceTest, AnEncodedPutOfTheCommittedBytesOpensNoTransaction) {
  Store s(Backend());
  ASSERT_TRUE(PutSync(s, "k", "v").ok());
  const StoreStats before = s.stats();
  ASSERT_TRUE(PutEncodedSync(s, "k", [] { return std::string("v"); }).ok());
  EXPECT_EQ(s.stats().transactions, before.transactions);
  EXPECT_EQ(s.stats().deduplicated, before.deduplicated + 1);
  // And a plain put of those bytes after it is a duplicate too.
  ASSERT_TRUE(PutSync(s, "k", "v").ok());
  EXPECT_EQ(s.stats().deduplicated, before.deduplicated + 2);
  ASSERT_TRUE(PutEncodedSync(s, "k", [] { return std::string("w"); }).ok());
  EXPECT_EQ(s.stats().transactions, before.transactions + 1);
  EXPECT_EQ(Value(s, "k"), "w");
}

// A plain put equal to the committed bytes, queued behind an encoded put of other
// bytes, is written: the key's latest value is the encoded one.
TEST_P(StoreConformanceTest, APlainPutBehindAnEncodedOneIsNotDroppedAsCommitted) {
  Store s(Backend());
  ASSERT_TRUE(PutSync(s, "k", "old").ok());
  s.PutEncoded("k", [] { return std::string("new"); });
  ASSERT_TRUE(PutSync(s, "k", "old").ok());
  EXPECT_EQ(Value(s, "k"), "old");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformanceTest, ::testing::Values("memory", "lmdb"),
                         [](const auto& info) { return info.param; });

TEST(StoreTest, AFailedCommitLeavesNoStaleHash) {
  // Reads come from the preset, writes fail: the same put must be tried every time.
  Store s(NewFailingBackend(absl::UnavailableError("disk on fire"), {{"k", "v"}}));
  absl::Status first = PutSync(s, "k", "v2");
  EXPECT_TRUE(absl::IsUnavailable(first)) << first;
  absl::Status again = PutSync(s, "k", "v2");
  EXPECT_TRUE(absl::IsUnavailable(again)) << again;  // not "deduplicated" into success
  EXPECT_EQ(s.stats().deduplicated, 0u);
  EXPECT_EQ(s.stats().failed, 2u);
  EXPECT_EQ(Value(s, "k"), "v");
}

TEST_P(StoreConformanceTest, FlushSettlesEverythingQueuedBeforeIt) {
  Store s(Backend());
  for (int i = 0; i < 20; ++i)
    s.Put("k" + std::to_string(i), "v" + std::to_string(i));
  ASSERT_TRUE(Sync([&](Store::Done d) { s.Flush(std::move(d)); }).ok());
  // Everything queued before the flush is readable (committed) when it completes.
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(Value(s, "k" + std::to_string(i)), "v" + std::to_string(i));
  // With nothing queued, a flush opens no transaction.
  const uint64_t settled = s.stats().transactions;
  ASSERT_TRUE(Sync([&](Store::Done d) { s.Flush(std::move(d)); }).ok());
  EXPECT_EQ(s.stats().transactions, settled);
}

TEST(StoreTest, AFlushBehindAFailingCommitStillCompletes) {
  Store s(NewFailingBackend(absl::UnavailableError("disk on fire")));
  std::promise<absl::Status> put;
  s.Put("k", "v", [&put](absl::Status st) { put.set_value(std::move(st)); });
  // The barrier reports that the queue is settled; the put's own callback says how.
  EXPECT_TRUE(Sync([&](Store::Done d) { s.Flush(std::move(d)); }).ok());
  EXPECT_TRUE(absl::IsUnavailable(put.get_future().get()));
  EXPECT_EQ(s.stats().failed, 1u);
}

TEST(StoreTest, APutEqualToAQueuedWriteLearnsThatWritesOutcome) {
  // The duplicate must not be told "durable" when the write it matched failed.
  Store s(NewFailingBackend(absl::UnavailableError("disk on fire")));
  std::promise<absl::Status> first, second;
  s.Put("k", "v", [&](absl::Status st) { first.set_value(st); });
  s.Put("k", "v", [&](absl::Status st) { second.set_value(st); });
  const absl::Status a = first.get_future().get();
  const absl::Status b = second.get_future().get();
  EXPECT_TRUE(absl::IsUnavailable(a)) << a;
  // Either in the same batch (and failed with it) or, if that batch was already being
  // committed, written on its own: never a success that did not happen.
  EXPECT_TRUE(absl::IsUnavailable(b)) << b;
}

// Holds the writer inside an encoder until released, so that what is queued
// meanwhile is committed as one batch.
class WriterGate {
 public:
  explicit WriterGate(Store& s) {
    auto entered = std::make_shared<std::promise<void>>();
    std::future<void> in = entered->get_future();
    // The encoder holds no reference to the gate: it may outlive it.
    s.PutEncoded("gate", [entered, release = release_->get_future().share()] {
      entered->set_value();
      release.wait();
      return std::string("g");
    });
    in.wait();
  }
  ~WriterGate() { Release(); }  // never leave the writer (and the Store's join) stuck
  void Release() {
    if (!std::exchange(released_, true))
      release_->set_value();
  }

 private:
  std::shared_ptr<std::promise<void>> release_ = std::make_shared<std::promise<void>>();
  bool released_ = false;
};

TEST(StoreTest, AnEncodedPutBehindADeleteInItsBatchIsWritten) {
  Store s(NewMemoryBackend());
  ASSERT_TRUE(PutSync(s, "b/k", "A").ok());
  WriterGate gate(s);
  s.DeletePrefix("b/");
  std::promise<absl::Status> put;
  s.PutEncoded(
      "b/k", [] { return std::string("A"); },
      [&put](absl::Status st) { put.set_value(std::move(st)); });
  gate.Release();
  EXPECT_TRUE(put.get_future().get().ok());
  // Equal to what was committed before, but the delete in its batch came first.
  EXPECT_EQ(Value(s, "b/k"), "A");
  EXPECT_EQ(s.stats().deduplicated, 0u);
}

TEST(StoreTest, IdenticalEncodedPutsOfTheCommittedBytesInOneBatchAreAllDropped) {
  Store s(NewMemoryBackend());
  ASSERT_TRUE(PutSync(s, "k", "v").ok());
  const StoreStats before = s.stats();
  WriterGate gate(s);  // its own write is one commit
  std::promise<absl::Status> first, second;
  s.PutEncoded(
      "k", [] { return std::string("v"); },
      [&first](absl::Status st) { first.set_value(std::move(st)); });
  s.PutEncoded(
      "k", [] { return std::string("v"); },
      [&second](absl::Status st) { second.set_value(std::move(st)); });
  gate.Release();
  EXPECT_TRUE(first.get_future().get().ok());
  EXPECT_TRUE(second.get_future().get().ok());
  EXPECT_EQ(s.stats().deduplicated, before.deduplicated + 2);
  EXPECT_EQ(s.stats().transactions, before.transactions + 1);
}

TEST(StoreTest, AFailingEncoderFailsOnlyItsOwnWrite) {
  Store s(NewMemoryBackend());
  WriterGate gate(s);
  std::promise<absl::Status> bad, good;
  s.PutEncoded(
      "bad", []() -> std::string { throw std::runtime_error("no bytes"); },
      [&bad](absl::Status st) { bad.set_value(std::move(st)); });
  s.PutEncoded(
      "good", [] { return std::string("v"); },
      [&good](absl::Status st) { good.set_value(std::move(st)); });
  gate.Release();
  const absl::Status b = bad.get_future().get();
  EXPECT_TRUE(absl::IsInternal(b)) << b;
  EXPECT_NE(b.message().find("no bytes"), std::string_view::npos) << b;
  EXPECT_TRUE(good.get_future().get().ok());
  EXPECT_EQ(Value(s, "bad"), "<none>");
  EXPECT_EQ(Value(s, "good"), "v");
  EXPECT_EQ(s.stats().failed, 1u);  // what a server's Flush watches
  // Nothing of the failed write is remembered: the same key can be written after.
  ASSERT_TRUE(PutSync(s, "bad", "fixed").ok());
  EXPECT_EQ(Value(s, "bad"), "fixed");
}

TEST(StoreTest, ConcurrentWritersShareCommits) {
  testing::TempDir dir;
  auto backend = OpenLmdb(dir.path() / "state.db");
  ASSERT_TRUE(backend.ok());
  Store s(std::move(*backend));
  constexpr int kThreads = 8;
  constexpr int kPuts = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&s, t] {
      for (int i = 0; i < kPuts; ++i)
        ASSERT_TRUE(PutSync(s, "t" + std::to_string(t) + "/" + std::to_string(i), "x").ok());
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(s.Scan("t")->size(), static_cast<size_t>(kThreads * kPuts));
  // Each writer waits for its own commit, so at most one transaction per put; with
  // writers overlapping, fewer.
  EXPECT_LT(s.stats().transactions, static_cast<uint64_t>(kThreads * kPuts));
}

TEST(StoreTest, AwaitingDurabilityResumesOnTheCallersLoop) {
  Store s(NewMemoryBackend());
  asio::io_context io;
  std::optional<absl::Status> put, del;
  std::thread::id resumed_on;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        put = co_await s.PutAsync("a/k", "v");
        resumed_on = std::this_thread::get_id();
        del = co_await s.DeletePrefixAsync("a/");
      },
      asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return del.has_value(); }));
  EXPECT_TRUE(put->ok());
  EXPECT_TRUE(del->ok());
  EXPECT_EQ(resumed_on, std::this_thread::get_id());
  EXPECT_EQ(Value(s, "a/k"), "<none>");
}

TEST(StoreTest, AwaitedPutOfCommittedBytesCompletesWithoutSuspending) {
  Store s(NewMemoryBackend());
  ASSERT_TRUE(PutSync(s, "a/k", "v").ok());
  const StoreStats before = s.stats();
  asio::io_context io;
  std::optional<absl::Status> same, changed;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { same = co_await s.PutAsync("a/k", "v"); },
      asio::detached);
  io.run_one();  // the coroutine's start: no second turn of the loop is needed
  ASSERT_TRUE(same.has_value());
  EXPECT_TRUE(same->ok());
  EXPECT_EQ(s.stats().writes, before.writes + 1);
  EXPECT_EQ(s.stats().deduplicated, before.deduplicated + 1);
  EXPECT_EQ(s.stats().transactions, before.transactions);
  // New bytes do wait for their commit.
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { changed = co_await s.PutAsync("a/k", "w"); },
      asio::detached);
  ASSERT_TRUE(testing::RunUntil(io, [&] { return changed.has_value(); }));
  EXPECT_TRUE(changed->ok());
  EXPECT_EQ(s.stats().transactions, before.transactions + 1);
  EXPECT_EQ(Value(s, "a/k"), "w");
}

TEST(StoreTest, ATransactionTakesAtMostMaxBatchWrites) {
  Store s(NewMemoryBackend(), StoreOptions{.max_batch_writes = 4});
  const uint64_t before = s.stats().transactions;
  WriterGate gate(s);  // its own write is one commit
  for (int i = 0; i < 10; ++i)
    s.Put("k" + std::to_string(i), "v");
  gate.Release();
  ASSERT_TRUE(Sync([&](Store::Done d) { s.Flush(std::move(d)); }).ok());
  EXPECT_EQ(s.stats().transactions, before + 1 + 3);  // 4, 4 and 2 writes
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(Value(s, "k" + std::to_string(i)), "v");
}

TEST(StoreTest, ABoundOfZeroWritesCommitsOneAtATime) {
  Store s(NewMemoryBackend(), StoreOptions{.max_batch_writes = 0});
  ASSERT_TRUE(PutSync(s, "k", "v").ok());  // not an empty batch forever
  EXPECT_EQ(Value(s, "k"), "v");
}

// Fails every commit that writes `key`; the rest go to memory.
class FailsOneKeyBackend : public KvBackend {
 public:
  explicit FailsOneKeyBackend(std::string key) : key_(std::move(key)) {}
  std::string Name() const override { return "fails-one-key"; }
  absl::Status Commit(const std::vector<KvOp>& ops) override {
    for (const KvOp& op : ops) {
      if (op.key == key_)
        return absl::UnavailableError("disk on fire");
    }
    return inner_->Commit(ops);
  }
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) override {
    return inner_->Get(key);
  }
  absl::StatusOr<KvPairs> Scan(std::string_view prefix) override { return inner_->Scan(prefix); }

 private:
  std::string key_;
  std::unique_ptr<KvBackend> inner_ = NewMemoryBackend();
};

TEST(StoreTest, APutDeduplicatedBeyondTheCutLearnsItsWritesOutcome) {
  Store s(std::make_unique<FailsOneKeyBackend>("k"), StoreOptions{.max_batch_writes = 2});
  WriterGate gate(s);
  std::promise<absl::Status> leader, follower, later;
  s.Put("k", "v", [&](absl::Status st) { leader.set_value(st); });
  s.Put("a", "v");  // the cut: the first transaction holds "k" and "a"
  s.Put("b", "v", [&](absl::Status st) { later.set_value(st); });
  // Queued behind "b", deduplicated against the queued "k": it must fail with "k"'s
  // transaction, not succeed with "b"'s.
  s.Put("k", "v", [&](absl::Status st) { follower.set_value(st); });
  gate.Release();
  const absl::Status l = leader.get_future().get();
  const absl::Status f = follower.get_future().get();
  EXPECT_TRUE(absl::IsUnavailable(l)) << l;
  EXPECT_TRUE(absl::IsUnavailable(f)) << f;
  EXPECT_TRUE(later.get_future().get().ok());
  EXPECT_EQ(s.stats().deduplicated, 1u);
  EXPECT_EQ(Value(s, "k"), "<none>");
  EXPECT_EQ(Value(s, "b"), "v");
}

TEST(StoreTest, UnbatchedStoreCommitsEachWriteAlone) {
  Store s(NewMemoryBackend(), StoreOptions{.dedup = false, .batch = false});
  for (int i = 0; i < 10; ++i)
    s.Put("k", "same");
  ASSERT_TRUE(PutSync(s, "k", "same").ok());
  EXPECT_EQ(s.stats().transactions, 11u);
  EXPECT_EQ(s.stats().deduplicated, 0u);
}

TEST(LmdbTest, PersistsAcrossReopenWithOwnerOnlyPermissions) {
  testing::TempDir dir;
  const fs::path path = dir.path() / "state.db";
  {
    auto b = OpenLmdb(path);
    ASSERT_TRUE(b.ok()) << b.status();
    Store s(std::move(*b));
    ASSERT_TRUE(PutSync(s, "meta/version", "1").ok());
  }
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  auto b = OpenLmdb(path);
  ASSERT_TRUE(b.ok());
  Store s(std::move(*b));
  EXPECT_EQ(Value(s, "meta/version"), "1");
  auto bad = OpenLmdb(dir.path() / "missing-dir" / "state.db");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("missing-dir"), std::string::npos) << bad.status();
}

// A child process writes as fast as it can and reports each write the store
// acknowledged as durable; it is SIGKILLed at a random point. Every reopen succeeds and
// holds every acknowledged write.
TEST(LmdbTest, AcknowledgedWritesSurviveSigkillAtRandomPoints) {
  testing::TempDir dir;
  const fs::path path = dir.path() / "state.db";
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    int acks[2];
    ASSERT_EQ(pipe(acks), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(acks[0]);
      auto b = OpenLmdb(path);
      if (!b.ok())
        _exit(2);
      Store s(std::move(*b));
      // Groups of 8 in flight at once (so commits are shared), then wait for them.
      for (int i = 0; i < 100000;) {
        std::promise<void> group;
        for (int n = 0; n < 8; ++n, ++i) {
          const std::string key = "r" + std::to_string(round) + "/" + std::to_string(i);
          const bool last = n == 7;
          s.Put(key, std::string(4096, static_cast<char>('a' + i % 26)),
                [fd = acks[1], i, last, &group](absl::Status st) {
                  if (st.ok())
                    (void)!write(fd, &i, sizeof i);
                  if (last)
                    group.set_value();
                });
        }
        group.get_future().wait();
      }
      _exit(0);
    }
    close(acks[1]);
    // Let it get somewhere, then kill it mid-flight.
    const int wanted = 1 + static_cast<int>(rng() % 200);
    std::vector<int> acked;
    while (static_cast<int>(acked.size()) < wanted) {
      pollfd pfd{acks[0], POLLIN, 0};
      ASSERT_GT(poll(&pfd, 1, 10000), 0) << "no progress in round " << round;
      int i = 0;
      if (read(acks[0], &i, sizeof i) != sizeof i)
        break;
      acked.push_back(i);
    }
    kill(child, SIGKILL);
    // Acks that were already in the pipe are acknowledged writes too.
    int i = 0;
    while (read(acks[0], &i, sizeof i) == sizeof i)
      acked.push_back(i);
    close(acks[0]);
    int status = 0;
    waitpid(child, &status, 0);

    auto b = OpenLmdb(path);
    ASSERT_TRUE(b.ok()) << "round " << round << ": " << b.status();
    for (int n : acked) {
      const std::string key = "r" + std::to_string(round) + "/" + std::to_string(n);
      auto v = (*b)->Get(key);
      ASSERT_TRUE(v.ok() && v->has_value()) << "round " << round << " lost acknowledged " << key;
      ASSERT_EQ(**v, std::string(4096, static_cast<char>('a' + n % 26)));
    }
  }
}

}  // namespace
}  // namespace drover::state
