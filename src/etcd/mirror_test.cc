// The mirror against a real etcd: it follows a prefix, survives a lost watch and a
// compaction, serves what it had while etcd is paused, and never goes back.
#include "etcd/mirror.h"

#include <gtest/gtest.h>

#include "common/cancellation.h"
#include "testing/await.h"
#include "testing/etcd_process.h"
#include "testing/test_util.h"

namespace drover::etcd {
namespace {

using namespace std::chrono_literals;                     // NOLINT
using namespace asio::experimental::awaitable_operators;  // NOLINT

class MirrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.ok()) << etcd_.Log();
    mirror_.OnChange([this](const std::vector<Mirror::Change>& changes, int64_t revision) {
      EXPECT_GE(revision, mirror_.revision());  // never back
      for (const auto& c : changes)
        seen_.push_back((c.value ? "put " : "delete ") + c.key);
    });
  }
  ~MirrorTest() override { Stop(); }

  template <typename T>
  T Run(asio::awaitable<T> work) {
    return drover::testing::Await(io_, std::move(work));
  }
  void Start() {
    stop_ = common::CancellationScope::Create(io_.get_executor());
    ended_.reset();
    asio::co_spawn(
        io_,
        [this, stop = stop_]() -> asio::awaitable<void> {
          auto r = co_await (mirror_.Run() || stop->Wait());
          ended_ = r.index() == 0 ? std::get<0>(r) : absl::CancelledError("stopped");
        },
        asio::detached);
  }
  void Stop() {
    if (stop_ && !ended_) {
      stop_->Cancel();
      drover::testing::RunUntil(
          io_, [&] { return ended_.has_value(); }, 5s);
    }
  }
  int64_t Put(const std::string& key, const std::string& value) {
    auto r = Run(writer_.Put(key, value));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(0);
  }
  bool Caught(int64_t revision) {
    return drover::testing::RunUntil(
        io_, [&] { return mirror_.revision() >= revision; }, 10s);
  }

  drover::testing::EtcdProcess etcd_;
  asio::io_context io_;
  common::RealClock clock_;
  Client writer_{{etcd_.endpoint()}};
  Client reader_{{etcd_.endpoint()}, ClientOptions{.call_timeout = 2s}};
  Mirror mirror_{io_.get_executor(), reader_, clock_, "/drover/"};
  common::CancellationScopePtr stop_;
  std::optional<absl::Status> ended_;
  std::vector<std::string> seen_;
};

TEST_F(MirrorTest, ItLoadsThenFollowsThePrefixInOrder) {
  Put("/drover/jobs/a", "1");
  Put("/elsewhere", "x");
  Start();
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return mirror_.ready(); }, 10s));
  EXPECT_EQ(mirror_.data(), (std::map<std::string, std::string>{{"/drover/jobs/a", "1"}}));
  Put("/drover/jobs/b", "2");
  ASSERT_TRUE(Run(writer_.Delete("/drover/jobs/a")).ok());
  const int64_t last = Put("/drover/jobs/b", "3");
  ASSERT_TRUE(Caught(last));
  EXPECT_EQ(mirror_.data(), (std::map<std::string, std::string>{{"/drover/jobs/b", "3"}}));
  EXPECT_EQ(seen_, (std::vector<std::string>{"put /drover/jobs/a", "put /drover/jobs/b",
                                             "delete /drover/jobs/a", "put /drover/jobs/b"}));
  EXPECT_TRUE(Run(mirror_.WaitFor(last, 1s)));
  EXPECT_FALSE(Run(mirror_.WaitFor(last + 100, 200ms)));
}

TEST_F(MirrorTest, AfterALostWatchAndACompactionItLoadsAgainAndReportsTheDifference) {
  Put("/drover/a", "1");
  Put("/drover/b", "1");
  Start();
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return mirror_.ready(); }, 10s));
  Stop();  // the watch is lost...
  ASSERT_TRUE(Run(writer_.Delete("/drover/a")).ok());
  Put("/drover/b", "2");
  const int64_t last = Put("/drover/c", "1");
  ASSERT_TRUE(Run(writer_.Compact(last)).ok());  // ...and what it missed compacted
  seen_.clear();
  Start();
  ASSERT_TRUE(Caught(last));
  EXPECT_EQ(mirror_.reloads(), 1);
  EXPECT_EQ(mirror_.data(),
            (std::map<std::string, std::string>{{"/drover/b", "2"}, {"/drover/c", "1"}}));
  EXPECT_EQ(seen_,
            (std::vector<std::string>{"delete /drover/a", "put /drover/b", "put /drover/c"}));
  // And it follows from there.
  const int64_t after = Put("/drover/d", "1");
  ASSERT_TRUE(Caught(after));
  EXPECT_TRUE(mirror_.data().contains("/drover/d"));
}

TEST_F(MirrorTest, WhileEtcdIsPausedItServesWhatItHadAndCatchesUpAfter) {
  Put("/drover/a", "1");
  Start();
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return mirror_.ready(); }, 10s));
  const int64_t before = mirror_.revision();
  etcd_.Pause();
  EXPECT_FALSE(drover::testing::RunUntil(
      io_, [&] { return ended_.has_value(); }, 1s));
  EXPECT_EQ(mirror_.data().at("/drover/a"), "1");
  EXPECT_EQ(mirror_.revision(), before);
  etcd_.Resume();
  const int64_t after = Put("/drover/a", "2");
  ASSERT_TRUE(Caught(after));
  EXPECT_EQ(mirror_.data().at("/drover/a"), "2");
}

// An etcd whose history is older than what was served (another cluster, a restored
// backup) stops the mirror rather than be served.
TEST_F(MirrorTest, AnEtcdThatWentBackInTimeStopsIt) {
  drover::testing::EtcdProcess other;
  ASSERT_TRUE(other.ok()) << other.Log();
  Client both({etcd_.endpoint(), other.endpoint()}, ClientOptions{.call_timeout = 1s});
  Mirror mirror(io_.get_executor(), both, clock_, "/drover/");
  for (int i = 0; i < 5; ++i)
    Put("/drover/k", std::to_string(i));
  std::optional<absl::Status> ended;
  auto stop = common::CancellationScope::Create(io_.get_executor());
  auto run = [&]() -> asio::awaitable<void> {
    auto r = co_await (mirror.Run() || stop->Wait());
    ended = r.index() == 0 ? std::get<0>(r) : absl::CancelledError("stopped");
  };
  asio::co_spawn(io_, run, asio::detached);
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return mirror.ready(); }, 10s));
  const int64_t served = mirror.revision();
  etcd_.Pause();  // its watch goes quiet; a new one goes to the other etcd
  stop->Cancel();
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return ended.has_value(); }, 5s));
  ended.reset();
  stop = common::CancellationScope::Create(io_.get_executor());
  asio::co_spawn(io_, run, asio::detached);
  ASSERT_TRUE(drover::testing::RunUntil(
      io_, [&] { return ended.has_value(); }, 20s));
  EXPECT_TRUE(absl::IsFailedPrecondition(*ended)) << *ended;
  EXPECT_EQ(mirror.revision(), served);
  EXPECT_EQ(mirror.data().at("/drover/k"), "4");
  etcd_.Resume();
}

}  // namespace
}  // namespace drover::etcd
