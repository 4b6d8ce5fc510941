// The server state's two backends (docs/ha.md) held to one contract: the embedded LMDB
// store and etcd each carry compare-and-set registrations, blocking queries and indexes
// that only grow, across a change of writer (a restart; a new leader). Then etcd's own
// case: a follower whose watch breaks while what it missed is compacted loads the state
// again and never serves an older view than one it served.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "etcd/client.h"
#include "server/ha_test_cluster.h"
#include "server/state_test_util.h"
#include "server/test_fixtures.h"
#include "testing/tcp_proxy.h"

namespace drover::server {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// What the suite needs of a backend: the server whose writes reach it, a view that
// learns of them through it, and a way to lose that server and go on with another.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual asio::io_context& io() = 0;
  virtual Server& Writer() = 0;
  virtual StateStore& View() = 0;
  virtual void ReplaceWriter() = 0;
};

// LMDB: the view is the writer's own state; a new writer is a restart on the same DB.
class LmdbBackend : public Backend {
 public:
  LmdbBackend() { Open(); }
  ~LmdbBackend() override { Close(); }
  asio::io_context& io() override { return io_; }
  Server& Writer() override { return *server_; }
  StateStore& View() override { return server_->state(); }
  void ReplaceWriter() override {
    Close();
    Open();
  }

 private:
  void Open() {
    server_ = std::make_unique<Server>(io_.get_executor(), pool_, clock_, ServerConfig{});
    auto db = OpenServerStore(dir_.path().string());
    ASSERT_TRUE(db.ok()) << db.status();
    absl::Status attached = server_->state().Attach(std::move(*db));
    ASSERT_TRUE(attached.ok()) << attached;
    server_->Start();
  }
  void Close() {
    server_->Stop();
    io_.restart();
    io_.poll();
    server_.reset();
  }

  testing::TempDir dir_;
  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::RealClock clock_;
  std::unique_ptr<Server> server_;
};

// etcd: two servers; the view is the follower's; a new writer is the next leader after
// the current one resigns, with a fresh server joining in its place.
class EtcdBackend : public Backend, public test::HaTestCluster {
 public:
  EtcdBackend() {
    EXPECT_TRUE(etcd_.ok()) << etcd_.Log();
    Join("s0");
    Join("s1");
    EXPECT_NE(AwaitLeader(), nullptr);
  }
  asio::io_context& io() override { return io_; }
  Server& Writer() override { return *AwaitLeader()->server; }
  StateStore& View() override {
    Server& leader = Writer();
    for (auto& p : peers_) {
      if (p->server.get() != &leader)
        return p->server->state();
    }
    ADD_FAILURE() << "no follower";
    return leader.state();
  }
  void ReplaceWriter() override {
    Remove(*AwaitLeader());
    Join("s" + std::to_string(++joined_));
    ASSERT_NE(AwaitLeader(), nullptr);
  }

 private:
  int joined_ = 1;
};

class StateConformanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  StateConformanceTest() {
    if (GetParam() == "lmdb")
      backend_ = std::make_unique<LmdbBackend>();
    else
      backend_ = std::make_unique<EtcdBackend>();
  }
  template <typename T>
  T Run(asio::awaitable<T> work) {
    return testing::Await(backend_->io(), std::move(work), 30s);
  }
  bool Until(const std::function<bool()>& pred) {
    return testing::RunUntil(backend_->io(), pred, 15s);
  }
  absl::StatusOr<EvalResponse> Register(model::Job job,
                                        std::optional<uint64_t> enforce_index = std::nullopt) {
    auto prepared = codec::PrepareJob(std::move(job), "global");
    if (!prepared.ok())
      return prepared.status();
    return Run(backend_->Writer().RegisterJobDurably(*std::move(prepared), enforce_index));
  }
  // Until the view holds everything the writer made durable.
  bool ViewCaughtUp() {
    if (!Run(backend_->Writer().state().Flush()).ok())
      return false;
    const uint64_t written = backend_->Writer().state().LatestIndex();
    return Until([&] { return backend_->View().LatestIndex() >= written; });
  }

  std::unique_ptr<Backend> backend_;
};

TEST_P(StateConformanceTest, EnforceIndexIsACompareAndSetThatHoldsAcrossWriters) {
  ASSERT_TRUE(Register(test::MakeJob("web"), 0).ok());  // 0: only if there is none
  const uint64_t modify = backend_->Writer().state().GetJob("default", "web")->job_modify_index;
  EXPECT_TRUE(absl::IsFailedPrecondition(Register(test::MakeJob("web", 2), 0).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(Register(test::MakeJob("web", 2), modify + 1).status()));

  backend_->ReplaceWriter();
  JobPtr kept = backend_->Writer().state().GetJob("default", "web");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->job_modify_index, modify);
  auto won = Register(test::MakeJob("web", 2), modify);
  ASSERT_TRUE(won.ok()) << won.status();
  // A second writer that read the same index lost the race.
  auto lost = Register(test::MakeJob("web", 3), modify);
  EXPECT_TRUE(absl::IsFailedPrecondition(lost.status())) << lost.status();
  EXPECT_EQ(backend_->Writer().state().GetJob("default", "web")->task_groups[0].count, 2);
}

TEST_P(StateConformanceTest, ABlockingQueryOnTheViewWakesOnAWriteAndOnlyThen) {
  ASSERT_TRUE(Register(test::MakeJob("a")).ok());
  // Settled: its evaluation done and a blocked one waiting for a node (there is none).
  ASSERT_TRUE(Until([&] {
    const auto evals = backend_->Writer().state().EvalsByJob("default", "a");
    return evals.size() == 2 && std::all_of(evals.begin(), evals.end(), [](const EvalPtr& e) {
             return e->status != model::kEvalPending;
           });
  }));
  ASSERT_TRUE(ViewCaughtUp());
  StateStore& view = backend_->View();
  const uint64_t seen = view.TableIndex(Table::kJobs);
  // Nothing changes: the query waits out its time and answers no newer index.
  EXPECT_LE(Run(view.BlockUntil({Table::kJobs}, seen, 300ms)), seen);

  std::optional<uint64_t> woke;
  asio::co_spawn(
      backend_->io(),
      [&]() -> asio::awaitable<void> {
        std::vector<Table> jobs = {Table::kJobs};
        woke = co_await view.BlockUntil(std::move(jobs), seen, 60s);
      },
      asio::detached);
  ASSERT_TRUE(Register(test::MakeJob("b")).ok());
  ASSERT_TRUE(Until([&] { return woke.has_value(); }));
  EXPECT_GT(*woke, seen);
  // It may have woken for a later change of job "a" (its status); "b" follows.
  EXPECT_TRUE(Until([&] { return view.GetJob("default", "b") != nullptr; }));
}

TEST_P(StateConformanceTest, IndexesOnlyGrowAndEveryWriteOutlivesItsWriter) {
  uint64_t last = 0;
  std::map<std::string, uint64_t> modify_index;
  for (int round = 0; round < 4; ++round) {
    const std::string id = "job" + std::to_string(round);
    auto resp = Register(test::MakeJob(id));
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_GT(resp->index, last) << "round " << round;
    last = resp->index;
    modify_index[id] = backend_->Writer().state().GetJob("default", id)->job_modify_index;

    backend_->ReplaceWriter();
    StateStore& now = backend_->Writer().state();
    EXPECT_GE(now.LatestIndex(), last) << "round " << round;
    for (const auto& [job, index] : modify_index) {
      JobPtr kept = now.GetJob("default", job);
      ASSERT_NE(kept, nullptr) << job << " lost in round " << round;
      EXPECT_EQ(kept->job_modify_index, index) << job;
    }
  }
  ASSERT_TRUE(ViewCaughtUp());
  EXPECT_EQ(backend_->View().ListJobs("default", "").size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StateConformanceTest, ::testing::Values("lmdb", "etcd"),
                         [](const auto& info) { return info.param; });

class EtcdViewTest : public ::testing::Test, public test::HaTestCluster {
 protected:
  using test::HaTestCluster::Run;  // not ::testing::Test::Run
  void SetUp() override { ASSERT_TRUE(etcd_.ok()) << etcd_.Log(); }
};

TEST_F(EtcdViewTest, AViewThatLosesItsWatchPastACompactionLoadsAgainAndNeverGoesBack) {
  Peer& a = Join("a");
  ASSERT_TRUE(Until([&] { return a.server->leader(); }));
  testing::TcpProxy proxy(etcd_.endpoint());  // b reaches etcd only through it
  Peer& b = Join("b", Config(proxy.endpoint()));
  StateStore& view = b.server->state();
  Register(a, test::MakeJob("old"));
  ASSERT_TRUE(Until([&] { return view.GetJob("default", "old") != nullptr; }));

  // Checked on every turn of the loop from here on: the view never goes back.
  uint64_t served = view.LatestIndex();
  bool went_back = false;
  auto watch = [&] {
    went_back |= view.LatestIndex() < served;
    served = std::max(served, view.LatestIndex());
  };
  const uint64_t before = view.TableIndex(Table::kJobs);
  std::optional<uint64_t> woke;
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        std::vector<Table> jobs = {Table::kJobs};
        woke = co_await view.BlockUntil(std::move(jobs), before, 60s);
      },
      asio::detached);

  proxy.Cut();
  Register(a, test::MakeJob("new"));
  auto purged = Run(a.server->DeregisterJobDurably("default", "old", true, false));
  ASSERT_TRUE(purged.ok()) << purged.status();
  etcd::Client client({etcd_.endpoint()});
  auto revision = Run(client.Put("/elsewhere", "x"));
  ASSERT_TRUE(revision.ok()) << revision.status();
  ASSERT_TRUE(Run(client.Compact(*revision)).ok());  // what b missed is gone from history

  // Cut off, b serves what it had.
  Until(
      [&] {
        watch();
        return false;
      },
      500ms);
  EXPECT_NE(view.GetJob("default", "old"), nullptr);
  EXPECT_EQ(view.GetJob("default", "new"), nullptr);
  EXPECT_FALSE(woke.has_value());

  proxy.Restore();
  ASSERT_TRUE(Until([&] {
    watch();
    return view.GetJob("default", "new") != nullptr && view.GetJob("default", "old") == nullptr;
  }));
  EXPECT_EQ(b.ha->mirror().reloads(), 1);
  EXPECT_FALSE(went_back);
  ASSERT_TRUE(Until([&] { return woke.has_value(); }));
  EXPECT_GT(*woke, before);
  // Then it holds exactly what the leader holds, and follows it from there.
  ASSERT_TRUE(Run(a.server->state().Flush()).ok());
  ASSERT_TRUE(Until([&] { return view.LatestIndex() >= a.server->state().LatestIndex(); }));
  EXPECT_EQ(test::Snapshot(view), test::Snapshot(a.server->state()));
  Register(a, test::MakeJob("later"));
  EXPECT_TRUE(Until([&] { return view.GetJob("default", "later") != nullptr; }));
}

}  // namespace
}  // namespace drover::server
