#include "client/allocwatcher/remote_watcher.h"

#include <deque>
#include <fstream>

#include <gtest/gtest.h>

#include "client/allocdir/snapshot.h"
#include "common/derived_token.h"
#include "testing/test_util.h"

namespace drover::allocwatcher {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT

// Answers the servers' queries from a script; records the indexes asked for.
struct Script {
  std::deque<absl::StatusOr<PrevAllocInfo>> answers;
  std::vector<uint64_t> asked;
  asio::awaitable<absl::StatusOr<PrevAllocInfo>> Next(uint64_t index) {
    asked.push_back(index);
    absl::StatusOr<PrevAllocInfo> a = answers.front();
    if (answers.size() > 1)
      answers.pop_front();
    co_return a;
  }
};

// Serves the snapshot of a local alloc dir, checking the token as the node does.
class LocalFetcher final : public SnapshotFetcher {
 public:
  LocalFetcher(const allocdir::AllocDir& dir, std::string secret)
      : dir_(dir), secret_(std::move(secret)) {}
  asio::awaitable<absl::Status> Fetch(std::string addr, std::string alloc_id, std::string token,
                                      uint64_t, ChunkSink& sink) override {
    addr_ = addr;
    if (!common::ValidMigrateToken(secret_, alloc_id, token))
      co_return absl::PermissionDeniedError("bad token");
    auto stream = allocdir::SnapshotStream::Open(dir_, alloc_id, {"web"}, 1 << 30);
    if (!stream.ok())
      co_return stream.status();
    for (std::string p = (*stream)->Next(1000); !p.empty(); p = (*stream)->Next(1000)) {
      if (absl::Status s = co_await sink.Write(std::move(p)); !s.ok())
        co_return s;
    }
    co_return absl::OkStatus();
  }
  std::string addr_;

 private:
  const allocdir::AllocDir& dir_;
  std::string secret_;
};

class RemoteWatcherTest : public ::testing::Test {
 protected:
  std::unique_ptr<PrevAllocWatcher> Make(bool migrate, SnapshotFetcher* fetcher = nullptr) {
    RemotePrevAlloc r{
        .alloc_id = "prev",
        .query = [this](uint64_t index, common::Duration) { return script_.Next(index); },
        .fetcher = fetcher,
        .migrate = migrate,
        .max_data = 1 << 20};
    return RemoteWatcher(std::move(r), clock_, pool_);
  }
  absl::Status Run(asio::awaitable<absl::Status> op) {
    std::optional<absl::Status> out;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { out = co_await std::move(op); }, asio::detached);
    EXPECT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] { return out.has_value(); }));
    return out.value_or(absl::InternalError("did not finish"));
  }
  static PrevAllocInfo Info(bool done, std::string node_status = "ready") {
    return PrevAllocInfo{.alloc_id = "prev",
                         .done = done,
                         .client_status = done ? "complete" : "running",
                         .node_id = "n1",
                         .node_status = std::move(node_status),
                         .node_http_addr = "127.0.0.1:1",
                         .migrate_token = common::MigrateToken("secret", "prev"),
                         .index = 7};
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  Script script_;
  testing::TempDir tmp_;
};

TEST_F(RemoteWatcherTest, WaitsUntilTheServersSayTheAllocIsDone) {
  script_.answers = {Info(false), Info(false), Info(true)};
  auto w = Make(false);
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  EXPECT_EQ(script_.asked, (std::vector<uint64_t>{0, 7, 7}));
  // A second wait asks nothing more.
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  EXPECT_EQ(script_.asked.size(), 3u);
}

TEST_F(RemoteWatcherTest, RetriesTransportErrorsAndGivesUpOnRefusals) {
  script_.answers = {absl::UnavailableError("no server"), absl::UnavailableError("no server"),
                     Info(true)};
  const common::Time before = clock_.Now();
  ASSERT_TRUE(Run(Make(false)->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  EXPECT_EQ(script_.asked.size(), 3u);
  EXPECT_EQ(clock_.Now() - before, 3s);  // backoff 1 s, then 2 s
  script_ = Script{};
  script_.answers = {absl::PermissionDeniedError("not yours")};
  auto w = Make(true);
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  allocdir::AllocDir dest(tmp_.path() / "root", "new");
  ASSERT_TRUE(dest.Build().ok());
  EXPECT_TRUE(Run(w->Migrate(dest, {"web"})).ok());  // nothing to migrate
}

TEST_F(RemoteWatcherTest, AStopEndsTheWait) {
  script_.answers = {absl::UnavailableError("no server")};
  auto stop = common::CancellationScope::Create(io_.get_executor());
  stop->Cancel();
  EXPECT_TRUE(absl::IsCancelled(Run(Make(false)->Wait(stop))));
}

TEST_F(RemoteWatcherTest, PullsTheDataFromTheOldNode) {
  allocdir::AllocDir old(tmp_.path() / "old", "prev");
  ASSERT_TRUE(old.Build().ok());
  ASSERT_TRUE(old.BuildTaskDir("web").ok());
  std::ofstream(old.data_dir() / "db") << "rows";
  std::ofstream(old.task_dir("web").local / "cache") << "warm";
  LocalFetcher fetcher(old, "secret");
  script_.answers = {Info(true)};
  auto w = Make(true, &fetcher);
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  allocdir::AllocDir dest(tmp_.path() / "new", "new");
  ASSERT_TRUE(dest.Build().ok());
  ASSERT_TRUE(Run(w->Migrate(dest, {"web"})).ok());
  EXPECT_EQ(fetcher.addr_, "127.0.0.1:1");
  EXPECT_EQ(testing::ReadFile(dest.data_dir() / "db"), "rows");
  EXPECT_EQ(testing::ReadFile(dest.task_dir("web").local / "cache"), "warm");
}

TEST_F(RemoteWatcherTest, ADownNodeOrAWrongTokenMeansNoData) {
  allocdir::AllocDir old(tmp_.path() / "old", "prev");
  ASSERT_TRUE(old.Build().ok());
  LocalFetcher fetcher(old, "other-secret");
  allocdir::AllocDir dest(tmp_.path() / "new", "new");
  ASSERT_TRUE(dest.Build().ok());
  script_.answers = {Info(true, "down")};
  auto w = Make(true, &fetcher);
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  absl::Status s = Run(w->Migrate(dest, {"web"}));
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("is down"), std::string::npos) << s;
  EXPECT_TRUE(fetcher.addr_.empty());
  script_.answers = {Info(true)};
  w = Make(true, &fetcher);
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(Run(w->Migrate(dest, {"web"}))));
  // Without `migrate`, nothing is pulled at all.
  fetcher.addr_.clear();
  w = Make(false, &fetcher);
  ASSERT_TRUE(Run(w->Wait(common::CancellationScope::Create(io_.get_executor()))).ok());
  EXPECT_TRUE(Run(w->Migrate(dest, {"web"})).ok());
  EXPECT_TRUE(fetcher.addr_.empty());
}

}  // namespace
}  // namespace drover::allocwatcher
