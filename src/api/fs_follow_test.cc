// Following files: across rotations, heartbeats on silence, the end once no more can
// come, and a client that leaves — with a fake clock and a recording writer.
#include "api/fs_follow.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/api_test_util.h"
#include "codec/json.h"
#include "testing/test_util.h"

namespace drover::api {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT

using test::RecordingWriter;

class FollowTest : public ::testing::Test {
 protected:
  FollowTest() {
    ctx_.pool = &pool_;
    ctx_.clock = &clock_;
    fs::create_directories(logs_);
  }
  ~FollowTest() override { pool_.join(); }

  void Append(const std::string& name, const std::string& data) {
    std::ofstream(logs_ / name, std::ios::app) << data;
  }
  // Starts following; `done` is set when FollowFiles returns.
  void Follow(allocdir::FollowTarget target, bool plain, bool follow,
              std::function<bool()> may_grow = nullptr) {
    FollowSpec spec{.dir = {dir_.path(), "a1"},
                    .target = std::move(target),
                    .plain = plain,
                    .follow = follow,
                    .may_grow = std::move(may_grow)};
    asio::co_spawn(
        io_,
        [this, spec]() -> asio::awaitable<void> {
          co_await FollowFiles(ctx_, spec, writer_);
          done_ = true;
        },
        asio::detached);
  }
  bool RunUntil(const std::function<bool()>& pred) {
    return testing::RunWithFakeClock(io_, clock_, pred);
  }
  std::string Data() const {
    std::string out;
    for (const auto& c : writer_.chunks) {
      auto frame = codec::ParseJson(c);
      std::string bytes;
      if (frame.ok() && frame->contains("Data"))
        absl::Base64Unescape((*frame)["Data"].get<std::string>(), &bytes);
      out += bytes;
    }
    return out;
  }

  asio::io_context io_;
  asio::thread_pool pool_{1};
  common::FakeClock clock_;
  ApiContext ctx_;
  testing::TempDir dir_;
  fs::path logs_ = dir_.path() / "a1" / "alloc" / "logs";
  RecordingWriter writer_;
  bool done_ = false;
  bool alive_ = true;
};

TEST_F(FollowTest, FollowsALogAcrossRotationsThenEndsOnceTheTaskIsDead) {
  Append("web.stdout.0", "ab");
  Follow({.task = "web", .type = "stdout"}, false, true, [this] { return alive_; });
  ASSERT_TRUE(RunUntil([&] { return Data() == "ab"; }));
  Append("web.stdout.0", "cd");
  Append("web.stdout.1", "ef");  // rotated: the rest of .0 first, then .1
  ASSERT_TRUE(RunUntil([&] { return Data() == "abcdef"; }));
  auto last = codec::ParseJson(writer_.chunks.back());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ((*last)["File"], "alloc/logs/web.stdout.1");
  EXPECT_EQ((*last)["Offset"], 2);
  // Silence: a heartbeat frame every 10 s.
  const size_t before = writer_.chunks.size();
  ASSERT_TRUE(RunUntil([&] { return writer_.chunks.size() > before; }));
  EXPECT_EQ(writer_.chunks.back(), "{}");
  // The task writes its last words and dies: they are sent, then the stream ends.
  Append("web.stdout.1", "gh");
  alive_ = false;
  ASSERT_TRUE(RunUntil([&] { return done_; }));
  EXPECT_EQ(Data(), "abcdefgh");
}

TEST_F(FollowTest, PlainFromTheEndAndAClientThatLeaves) {
  Append("web.stderr.0", "0123456789");
  Follow({.task = "web", .type = "stderr", .offset = 3, .from_end = true}, true, true,
         [] { return true; });
  ASSERT_TRUE(RunUntil([&] { return !writer_.chunks.empty(); }));
  EXPECT_EQ(writer_.chunks, std::vector<std::string>{"789"});
  writer_.gone = true;  // nothing more to send, but the client is gone: stop
  ASSERT_TRUE(RunUntil([&] { return done_; }));
}

TEST_F(FollowTest, OneFileWithoutFollowingStopsAtItsEnd) {
  Append("x.log", "hello");
  Follow({.path = "alloc/logs/x.log"}, true, false);
  ASSERT_TRUE(RunUntil([&] { return done_; }));
  EXPECT_EQ(writer_.chunks, std::vector<std::string>{"hello"});
}

// A read without follow is limited to the log's size when it came; a task that keeps
// writing and rotating does not make it longer.
TEST_F(FollowTest, TheLimitCountsAcrossRotatedFiles) {
  Append("web.stdout.0", "abcd");
  Append("web.stdout.1", "efgh");
  Append("web.stdout.2", "ijkl");
  Follow({.task = "web", .type = "stdout", .limit = 6}, true, false);
  ASSERT_TRUE(RunUntil([&] { return done_; }));
  std::string all;
  for (const auto& c : writer_.chunks)
    all += c;
  EXPECT_EQ(all, "abcdef");
}

}  // namespace
}  // namespace drover::api
