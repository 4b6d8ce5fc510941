#include "drivers/mock/mock_driver.h"

#include <csignal>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::drivers {
namespace {

using namespace std::chrono_literals;  // NOLINT

class MockDriverTest : public ::testing::Test {
 protected:
  template <typename T>
  T Run(asio::awaitable<T> op) {
    std::optional<T> out;
    asio::co_spawn(
        io_, [&]() -> asio::awaitable<void> { out = co_await std::move(op); }, asio::detached);
    EXPECT_TRUE(testing::RunWithFakeClock(io_, clock_, [&] { return out.has_value(); }));
    return std::move(*out);
  }
  TaskConfig Config(const std::string& id, model::Value::Object cfg) {
    TaskConfig c;
    c.id = id;
    c.config = std::move(cfg);
    return c;
  }

  asio::io_context io_;
  common::FakeClock clock_;
  MockDriver driver_{io_.get_executor(), clock_};
};

TEST_F(MockDriverTest, RunsForConfiguredTimeThenExitsWithCode) {
  const common::Time start = clock_.Now();
  ASSERT_TRUE(Run(driver_.StartTask(Config("a", {{"run_for", "10s"}, {"exit_code", 4}}))).ok());
  auto r = Run(driver_.WaitTask("a"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 4);
  EXPECT_EQ(clock_.Now() - start, 10s);
}

TEST_F(MockDriverTest, StartErrorsAreRecoverableOnlyWhenAsked) {
  auto a = Run(driver_.StartTask(Config("a", {{"start_error", "nope"}})));
  ASSERT_FALSE(a.ok());
  EXPECT_FALSE(IsRecoverable(a.status()));
  auto b = Run(driver_.StartTask(
      Config("b", {{"start_error", "later"}, {"start_error_recoverable", true}})));
  EXPECT_TRUE(IsRecoverable(b.status()));
  EXPECT_EQ(driver_.starts(), 0);
}

TEST_F(MockDriverTest, StopHonorsKillAfterAndForceKillsPastTimeout) {
  ASSERT_TRUE(Run(driver_.StartTask(Config("a", {{"run_for", "1h"}, {"kill_after", "3s"}}))).ok());
  const common::Time start = clock_.Now();
  ASSERT_TRUE(Run(driver_.StopTask("a", 5s, "SIGTERM")).ok());
  EXPECT_EQ(clock_.Now() - start, 3s);
  EXPECT_EQ(Run(driver_.WaitTask("a"))->signal, SIGTERM);

  ASSERT_TRUE(Run(driver_.StartTask(Config("b", {{"run_for", "1h"}, {"kill_after", "1m"}}))).ok());
  ASSERT_TRUE(Run(driver_.StopTask("b", 5s, "")).ok());
  EXPECT_EQ(Run(driver_.WaitTask("b"))->signal, SIGKILL);
}

TEST_F(MockDriverTest, CancelOnExitCancelsTheScopeWhenTheTaskExits) {
  ASSERT_TRUE(Run(driver_.StartTask(Config("a", {{"run_for", "10s"}}))).ok());
  auto scope = common::CancellationScope::Create(io_.get_executor());
  ASSERT_TRUE(driver_.CancelOnExit("a", scope));
  io_.poll();
  EXPECT_FALSE(scope->cancelled());
  const common::Time start = clock_.Now();
  Run([](std::shared_ptr<common::CancellationScope> s) -> asio::awaitable<bool> {
    co_await s->Wait();
    co_return true;
  }(scope));
  EXPECT_EQ(clock_.Now() - start, 10s);
  EXPECT_EQ(Run(driver_.WaitTask("a"))->exit_code, 0);

  auto late = common::CancellationScope::Create(io_.get_executor());
  ASSERT_TRUE(driver_.CancelOnExit("a", late));  // already exited: at once
  EXPECT_TRUE(late->cancelled());
  auto unknown = common::CancellationScope::Create(io_.get_executor());
  ASSERT_TRUE(driver_.CancelOnExit("x", unknown));  // WaitTask then says NotFound
  EXPECT_TRUE(unknown->cancelled());
}

TEST_F(MockDriverTest, UnknownTaskIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(Run(driver_.WaitTask("x")).status()));
  EXPECT_TRUE(absl::IsNotFound(driver_.SignalTask("x", "SIGHUP")));
}

}  // namespace
}  // namespace drover::drivers
