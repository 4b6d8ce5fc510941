// The typed state DB: one conformance suite over the LMDB and in-memory
// implementations, the canonical encoding, schema versions, and the no-op and failing
// implementations.
#include "state/state_db.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "state/lmdb_backend.h"
#include "testing/test_util.h"

namespace drover::state {
namespace {

namespace fs = std::filesystem;

template <typename T>
T Await(asio::io_context& io, asio::awaitable<T> op) {
  std::optional<T> out;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { out.emplace(co_await std::move(op)); }, asio::detached);
  EXPECT_TRUE(testing::RunUntil(io, [&] { return out.has_value(); }));
  return std::move(*out);
}

model::Allocation Alloc(const std::string& id) {
  model::Allocation a;
  a.id = id;
  a.name = "web.g[0]";
  a.job_id = "web";
  a.task_group = "g";
  a.client_status = "running";
  auto job = std::make_shared<model::Job>();
  job->id = "web";
  job->name = "web";
  a.job = job;
  return a;
}

std::shared_ptr<const model::Allocation> SharedAlloc(const std::string& id) {
  return std::make_shared<const model::Allocation>(Alloc(id));
}

model::TaskState Running() {
  model::TaskState ts;
  ts.state = "running";
  ts.restarts = 2;
  ts.AppendEvent(model::TaskEvent(model::kEventStarted, {}));
  return ts;
}

class StateDbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "lmdb") {
      auto db = OpenStateDb(dir_.path());
      ASSERT_TRUE(db.ok()) << db.status();
      db_ = std::move(*db);
    } else {
      auto db = NewStateDb(NewMemoryBackend());
      ASSERT_TRUE(db.ok()) << db.status();
      db_ = std::move(*db);
    }
  }
  absl::Status Do(asio::awaitable<absl::Status> op) { return Await(io_, std::move(op)); }

  asio::io_context io_;
  testing::TempDir dir_;
  std::unique_ptr<StateDb> db_;
};

TEST_P(StateDbTest, AllocationsRoundTripAndDeleteTakesEverythingUnderThem) {
  EXPECT_EQ(db_->Name(), GetParam());
  ASSERT_TRUE(Do(db_->PutAllocation(SharedAlloc("a1"))).ok());
  ASSERT_TRUE(Do(db_->PutAllocation(SharedAlloc("a2"))).ok());
  ASSERT_TRUE(Do(db_->PutTaskState("a1", "web", Running())).ok());
  ASSERT_TRUE(Do(db_->PutTaskRunnerLocalState("a1", "web", {{"RunComplete", false}})).ok());
  ASSERT_TRUE(
      Do(db_->PutAllocRecord("a1", AllocRecord::kAcknowledgedState, {{"ClientStatus", "running"}}))
          .ok());
  auto read = db_->GetAllAllocations();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->allocs.size(), 2u);
  EXPECT_TRUE(read->errors.empty());
  EXPECT_EQ(read->allocs[0].id, "a1");
  EXPECT_EQ(read->allocs[0].job->name, "web");
  EXPECT_EQ(read->allocs[0].client_status, "running");

  auto tr = db_->GetTaskRunnerState("a1", "web");
  ASSERT_TRUE(tr.ok()) << tr.status();
  ASSERT_TRUE(tr->task_state.has_value());
  EXPECT_EQ(tr->task_state->restarts, 2);
  EXPECT_EQ(tr->task_state->events.size(), 1u);
  ASSERT_TRUE(tr->local_state.has_value());
  EXPECT_EQ((*tr->local_state)["RunComplete"], false);
  auto none = db_->GetTaskRunnerState("a1", "db");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->task_state || none->local_state);

  ASSERT_TRUE(Do(db_->DeleteAllocationBucket("a1")).ok());
  ASSERT_TRUE(Do(db_->DeleteAllocationBucket("never")).ok());
  read = db_->GetAllAllocations();
  ASSERT_EQ(read->allocs.size(), 1u);
  EXPECT_EQ(read->allocs[0].id, "a2");
  EXPECT_FALSE(db_->GetTaskRunnerState("a1", "web")->task_state);
  EXPECT_FALSE(db_->GetAllocRecord("a1", AllocRecord::kAcknowledgedState)->has_value());
}

TEST_P(StateDbTest, TaskBucketsAndNodeRecords) {
  ASSERT_TRUE(Do(db_->PutTaskState("a1", "web", Running())).ok());
  ASSERT_TRUE(Do(db_->PutTaskState("a1", "sidecar", Running())).ok());
  ASSERT_TRUE(Do(db_->DeleteTaskBucket("a1", "web")).ok());
  EXPECT_FALSE(db_->GetTaskRunnerState("a1", "web")->task_state);
  EXPECT_TRUE(db_->GetTaskRunnerState("a1", "sidecar")->task_state);
  ASSERT_TRUE(Do(db_->PutNodeRecord(kNodeMeta, {{"rack", "r1"}})).ok());
  auto meta = db_->GetNodeRecord(kNodeMeta);
  ASSERT_TRUE(meta.ok() && meta->has_value());
  EXPECT_EQ((**meta)["rack"], "r1");
  EXPECT_FALSE(db_->GetNodeRecord(kDriverPluginState)->has_value());
}

TEST_P(StateDbTest, KeysThatWouldReachAnotherBucketAreRefused) {
  EXPECT_TRUE(absl::IsInvalidArgument(Do(db_->PutTaskState("a1/task-x", "web", Running()))));
  EXPECT_TRUE(absl::IsInvalidArgument(Do(db_->PutTaskState("a1", "../x", Running()))));
  EXPECT_TRUE(absl::IsInvalidArgument(Do(db_->DeleteAllocationBucket(""))));
}

INSTANTIATE_TEST_SUITE_P(Implementations, StateDbTest, ::testing::Values("lmdb", "memory"),
                         [](const auto& info) { return info.param; });

TEST(StateDbEncodingTest, EqualValuesAreEqualBytesWhateverTheirOrder) {
  codec::Json a = codec::Json::object();
  a["b"] = 1;
  a["a"] = {{"y", 2}, {"x", 3}};
  codec::Json b = codec::Json::object();
  b["a"] = {{"x", 3}, {"y", 2}};
  b["b"] = 1;
  EXPECT_EQ(Encode("V", a), Encode("V", b));
  // The same bytes as MessagePack of the wrapper object {"V": a}.
  const std::vector<uint8_t> wrapped = codec::Json::to_msgpack(codec::Json{{"V", a}});
  EXPECT_EQ(Encode("V", a), std::string(wrapped.begin(), wrapped.end()));
  auto back = Decode("V", Encode("V", a));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  EXPECT_TRUE(absl::IsDataLoss(Decode("Other", Encode("V", a)).status()));
  EXPECT_TRUE(absl::IsDataLoss(Decode("V", "\xc1garbage").status()));
}

TEST(StateDbEncodingTest, LargeRecordsAreCompressedAndStillCanonical) {
  model::Allocation big = Alloc("a1");
  auto job = std::make_shared<model::Job>(*big.job);
  for (int i = 0; i < 100; ++i)
    job->meta["key-" + std::to_string(i)] = "value that repeats " + std::to_string(i % 7);
  big.job = job;
  const codec::Json value = codec::ToJson(big);
  const std::string bytes = Encode("Alloc", value);
  const size_t plain = codec::Json::to_msgpack(codec::Json{{"Alloc", value}}).size();
  EXPECT_LT(bytes.size() * 3, plain) << "compressed " << bytes.size() << " of " << plain;
  EXPECT_EQ(Encode("Alloc", value), bytes);  // deterministic: dedup still works
  // Other records compressed between (on this thread's reused context) change nothing.
  EXPECT_NE(Encode("Other", codec::ToJson(Alloc("a2"))), bytes);
  EXPECT_EQ(Encode("Alloc", value), bytes);
  auto back = Decode("Alloc", bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, value);
  // Small records stay plain MessagePack (as every record of version 1 is).
  const std::string small = Encode("V", codec::Json{{"x", 1}});
  EXPECT_EQ(small, std::string("\x81\xa1V\x81\xa1x\x01"));
  // A damaged frame is an error, never a crash.
  std::string broken = bytes;
  broken[broken.size() / 2] ^= 0x5a;
  broken[broken.size() - 3] ^= 0x11;
  EXPECT_TRUE(absl::IsDataLoss(Decode("Alloc", broken).status()));
  const std::vector<uint8_t> lying =
      codec::Json::to_msgpack(codec::Json{{"Zstd", codec::Json::binary({1, 2, 3})}});
  EXPECT_TRUE(absl::IsDataLoss(Decode("Alloc", std::string(lying.begin(), lying.end())).status()));
}

TEST(StateDbEncodingTest, AnAllocationEncodesAsItsJsonWhateverJobItShares) {
  auto expect_same = [](const model::Allocation& a) {
    EXPECT_EQ(EncodeAllocation("Alloc", a), Encode("Alloc", codec::ToJson(a))) << a.id;
  };
  model::Allocation small = Alloc("small");  // below the compression threshold
  expect_same(small);
  model::Allocation none = Alloc("no-job");
  none.job = nullptr;
  expect_same(none);
  // Many allocations of one job object: its bytes are reused, and each allocation's own
  // fields still come out.
  auto big_job = std::make_shared<model::Job>(*small.job);
  for (int i = 0; i < 50; ++i)
    big_job->meta["key-" + std::to_string(i)] = "value " + std::to_string(i % 5);
  for (int i = 0; i < 3; ++i) {
    model::Allocation a = Alloc("shared-" + std::to_string(i));
    a.job = big_job;
    a.client_status = i == 1 ? "pending" : "running";
    a.task_states["t"] = Running();
    expect_same(a);
  }
  // More distinct jobs than the cache holds, in turn, twice.
  std::vector<model::Allocation> several;
  for (int i = 0; i < 6; ++i) {
    model::Allocation a = Alloc("several-" + std::to_string(i));
    auto job = std::make_shared<model::Job>(*big_job);
    job->id = "job-" + std::to_string(i);
    a.job = job;
    several.push_back(a);
  }
  for (int round = 0; round < 2; ++round) {
    for (const model::Allocation& a : several)
      expect_same(a);
  }
  // A job freed and another made (likely at the same address) is not taken for it.
  for (int i = 0; i < 4; ++i) {
    model::Allocation a = Alloc("reused-" + std::to_string(i));
    auto job = std::make_shared<model::Job>(*big_job);
    job->id = "reused-" + std::to_string(i);
    a.job = job;
    expect_same(a);
  }
}

TEST(StateDbVersionTest, ANewDbGetsTheVersionAndANewerOneIsRefused) {
  testing::TempDir dir;
  {
    auto db = OpenStateDb(dir.path());
    ASSERT_TRUE(db.ok()) << db.status();
  }
  {
    EXPECT_EQ(fs::status(dir.path() / "client").permissions() & fs::perms::all,
              fs::perms::owner_all);
    auto b = OpenLmdb(StateDbFile(dir.path()));
    ASSERT_TRUE(b.ok());
    auto v = (*b)->Get("meta/version");
    ASSERT_TRUE(v.ok() && v->has_value());
    EXPECT_EQ(**v, "1");
    ASSERT_TRUE((*b)->Commit({KvOp{KvOp::Kind::kPut, "meta/version", "2"}}).ok());
  }
  auto db = OpenStateDb(dir.path());
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.status().message().find("incompatible client state DB schema version \"2\""),
            std::string::npos)
      << db.status();
}

// A damaged file is an error naming it (DataLoss, which the agent refuses to start
// on), never a crash and never a silently empty DB.
TEST(StateDbDamageTest, TruncatedEmptyOrForeignFilesAreRefusedNamingThem) {
  testing::TempDir dir;
  const fs::path file = StateDbFile(dir.path());
  {
    auto b = OpenStateDb(dir.path());
    ASSERT_TRUE(b.ok()) << b.status();
    asio::io_context io;
    for (int i = 0; i < 200; ++i) {
      model::Allocation a = Alloc("a" + std::to_string(i));
      auto job = std::make_shared<model::Job>(*a.job);
      job->meta["pad"] = std::string(2000, 'x');
      a.job = job;
      bool done = false;
      asio::co_spawn(
          io,
          [](StateDb& db, model::Allocation al, bool& d) -> asio::awaitable<void> {
            auto shared = std::make_shared<const model::Allocation>(std::move(al));
            EXPECT_TRUE((co_await db.PutAllocation(shared)).ok());
            d = true;
          }(**b, a, done),
          asio::detached);
      ASSERT_TRUE(testing::RunUntil(io, [&] { return done; }));
    }
  }
  const std::string whole = testing::ReadFile(file);
  ASSERT_GT(whole.size(), 100'000u);
  auto expect_refused = [&](const std::string& contents, const std::string& why) {
    std::ofstream(file, std::ios::trunc | std::ios::binary) << contents;
    auto db = OpenStateDb(dir.path());
    ASSERT_FALSE(db.ok()) << why;
    EXPECT_TRUE(absl::IsDataLoss(db.status())) << why << ": " << db.status();
    EXPECT_NE(db.status().message().find(file.string()), std::string::npos) << db.status();
  };
  expect_refused(whole.substr(0, whole.size() / 2), "cut in half");
  expect_refused("", "empty");
  expect_refused(std::string(64 * 1024, '\x5a'), "not an LMDB file");
  // The intact file still opens with every allocation.
  std::ofstream(file, std::ios::trunc | std::ios::binary) << whole;
  auto db = OpenStateDb(dir.path());
  ASSERT_TRUE(db.ok()) << db.status();
  auto read = (*db)->GetAllAllocations();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->allocs.size(), 200u);
}

// The upgrade path, with a schema of the test's own (this build has only version 1):
// a DB written at version 1 ("the previous version") is upgraded to 2 after a backup
// copy; a DB no step leads from is refused untouched; a failing step leaves version 1.
Schema TestSchemaV2(bool fail = false) {
  SchemaUpgrade rename{
      .from = 1, .what = "move old/ to new/", .ops = [fail](KvBackend& db) {
        absl::StatusOr<std::vector<KvOp>> out = std::vector<KvOp>{};
        if (fail)
          return absl::StatusOr<std::vector<KvOp>>(absl::InternalError("step failed"));
        auto pairs = db.Scan("old/");
        if (!pairs.ok())
          return absl::StatusOr<std::vector<KvOp>>(pairs.status());
        for (const auto& [k, v] : *pairs) {
          out->push_back(KvOp{KvOp::Kind::kPut, "new/" + k.substr(4), v});
          out->push_back(KvOp{KvOp::Kind::kDelete, k, {}});
        }
        return out;
      }};
  return Schema{.name = "client state DB", .version = 2, .upgrades = {rename}};
}

void WriteV1Fixture(const fs::path& data_dir) {
  fs::create_directories(StateDbFile(data_dir).parent_path());
  auto b = OpenLmdb(StateDbFile(data_dir));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(
      (*b)->Commit({KvOp{KvOp::Kind::kPut, "meta/version", "1"},
                    KvOp{KvOp::Kind::kPut, "old/a", "A"}, KvOp{KvOp::Kind::kPut, "old/b", "B"}})
          .ok());
}

std::string Raw(const fs::path& file, const std::string& key) {
  auto b = OpenLmdb(file);
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok())
    return "<unopenable>";
  auto v = (*b)->Get(key);
  return v.ok() && v->has_value() ? **v : "<none>";
}

TEST(StateDbUpgradeTest, AnOlderDbIsUpgradedAfterABackupCopy) {
  testing::TempDir dir;
  WriteV1Fixture(dir.path());
  {
    auto db = OpenStateDb(dir.path(), TestSchemaV2());
    ASSERT_TRUE(db.ok()) << db.status();
  }
  const fs::path file = StateDbFile(dir.path());
  EXPECT_EQ(Raw(file, "meta/version"), "2");
  EXPECT_EQ(Raw(file, "new/a"), "A");
  EXPECT_EQ(Raw(file, "new/b"), "B");
  EXPECT_EQ(Raw(file, "old/a"), "<none>");
  // The backup is the version-1 DB as it was.
  const fs::path backup = file.string() + ".backup-v1";
  ASSERT_TRUE(fs::exists(backup));
  EXPECT_EQ(fs::status(backup).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(Raw(backup, "meta/version"), "1");
  EXPECT_EQ(Raw(backup, "old/a"), "A");
  // Opening again is a no-op.
  auto again = OpenStateDb(dir.path(), TestSchemaV2());
  ASSERT_TRUE(again.ok()) << again.status();
}

TEST(StateDbUpgradeTest, NoUpgradePathOrAFailingStepLeavesTheDbAsItWas) {
  testing::TempDir dir;
  WriteV1Fixture(dir.path());
  const fs::path file = StateDbFile(dir.path());
  Schema v3 = TestSchemaV2();
  v3.version = 3;  // no step from 2
  {
    auto db = OpenStateDb(dir.path(), v3);
    ASSERT_FALSE(db.ok());
    EXPECT_NE(db.status().message().find("has no upgrade from version 2"), std::string::npos)
        << db.status();
    EXPECT_NE(db.status().message().find(file.string()), std::string::npos) << db.status();
  }
  EXPECT_EQ(Raw(file, "meta/version"), "1");
  EXPECT_FALSE(fs::exists(file.string() + ".backup-v1"));
  {
    auto db = OpenStateDb(dir.path(), TestSchemaV2(/*fail=*/true));
    ASSERT_FALSE(db.ok());
    EXPECT_NE(db.status().message().find("failed to upgrade the client state DB from version 1 "
                                         "to 2 (move old/ to new/): step failed"),
              std::string::npos)
        << db.status();
  }
  EXPECT_EQ(Raw(file, "meta/version"), "1");
  EXPECT_EQ(Raw(file, "old/a"), "A");
}

TEST(StateDbUpgradeTest, RecordsWithoutAVersionAreNotTakenForANewDb) {
  auto backend = NewMemoryBackend();
  ASSERT_TRUE(backend->Commit({KvOp{KvOp::Kind::kPut, "jobs/x", "y"}}).ok());
  auto db = NewStateDb(std::move(backend));
  ASSERT_FALSE(db.ok());
  EXPECT_TRUE(absl::IsDataLoss(db.status())) << db.status();
  EXPECT_NE(db.status().message().find("holds 1 records but no schema version"), std::string::npos)
      << db.status();
}

TEST(StateDbFakesTest, AnUndecodableAllocationIsReportedAndSkipped) {
  auto backend = NewMemoryBackend();
  ASSERT_TRUE(backend
                  ->Commit({KvOp{KvOp::Kind::kPut, "meta/version", "1"},
                            KvOp{KvOp::Kind::kPut, "allocations/bad/alloc", "not msgpack"},
                            KvOp{KvOp::Kind::kPut, "allocations/good/alloc",
                                 Encode("Alloc", codec::ToJson(Alloc("good")))}})
                  .ok());
  auto db = NewStateDb(std::move(backend));
  ASSERT_TRUE(db.ok());
  auto read = (*db)->GetAllAllocations();
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->allocs.size(), 1u);
  EXPECT_EQ(read->allocs[0].id, "good");
  ASSERT_EQ(read->errors.count("bad"), 1u);
}

TEST(StateDbFakesTest, NoopAcceptsEverythingAndFailingRefusesEveryWrite) {
  asio::io_context io;
  auto noop = NewNoopStateDb();
  EXPECT_TRUE(Await(io, noop->PutAllocation(SharedAlloc("a"))).ok());
  EXPECT_TRUE(noop->GetAllAllocations()->allocs.empty());
  auto failing = NewFailingStateDb(absl::UnavailableError("disk gone"));
  ASSERT_TRUE(failing.ok()) << failing.status();
  EXPECT_TRUE(absl::IsUnavailable(Await(io, (*failing)->PutAllocation(SharedAlloc("a")))));
  EXPECT_TRUE(absl::IsUnavailable(Await(io, (*failing)->PutTaskState("a", "t", Running()))));
  EXPECT_TRUE((*failing)->GetAllAllocations()->allocs.empty());
}

TEST(StateDbDumpTest, EveryRecordNestedByItsKeyPath) {
  testing::TempDir dir;
  asio::io_context io;
  {
    auto db = OpenStateDb(dir.path());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(Await(io, (*db)->PutAllocation(SharedAlloc("a1"))).ok());
    ASSERT_TRUE(Await(io, (*db)->PutTaskState("a1", "web", Running())).ok());
  }
  auto dump = DumpStateDb(StateDbFile(dir.path()));
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_EQ((*dump)["meta"]["version"], "1");
  EXPECT_EQ((*dump)["allocations"]["a1"]["alloc"]["Alloc"]["ID"], "a1");
  EXPECT_EQ((*dump)["allocations"]["a1"]["task-web"]["task_state"]["TaskState"]["State"],
            "running");
  EXPECT_TRUE(absl::IsNotFound(DumpStateDb(dir.path() / "nope.db").status()));
}

}  // namespace
}  // namespace drover::state
