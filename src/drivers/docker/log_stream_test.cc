// Docker's multiplexed log frames, and a container's output followed into rotated log
// files against a real dockerd, resumed without writing anything twice.
#include "drivers/docker/log_stream.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "drivers/docker/docker_test_util.h"
#include "testing/await.h"
#include "testing/dockerd_process.h"

namespace drover::drivers::docker {
namespace {

std::string Frame(int stream, const std::string& payload) {
  std::string h(8, '\0');
  h[0] = static_cast<char>(stream);
  const uint32_t n = static_cast<uint32_t>(payload.size());
  h[4] = static_cast<char>(n >> 24);
  h[5] = static_cast<char>(n >> 16);
  h[6] = static_cast<char>(n >> 8);
  h[7] = static_cast<char>(n);
  return h + payload;
}

TEST(LogDemuxerTest, FramesAcrossPiecesAndBadHeaders) {
  LogDemuxer d;
  const std::string stream =
      Frame(1, "2026-12-03T09:00:00.000000001Z hello\n") + Frame(2, "2026-12-03T09:00:01Z oops\n");
  auto first = d.Feed(stream.substr(0, 20));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->empty());
  auto rest = d.Feed(stream.substr(20));
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_EQ(rest->size(), 2u);
  EXPECT_EQ((*rest)[0].stream, 1);
  EXPECT_EQ((*rest)[0].text, "hello\n");
  EXPECT_EQ((*rest)[0].time % 1'000'000'000, 1);
  EXPECT_EQ((*rest)[1].stream, 2);
  EXPECT_EQ((*rest)[1].text, "oops\n");
  LogDemuxer bad;
  EXPECT_FALSE(bad.Feed("HTTP/1.1 200 OK\r\n").ok());
  LogDemuxer big;
  std::string header(8, '\0');
  header[0] = 1;
  header[4] = 0x7f;  // 2 GiB
  EXPECT_FALSE(big.Feed(header).ok());
  LogDemuxer untimed;
  EXPECT_FALSE(untimed.Feed(Frame(1, "no-timestamp-here")).ok());
}

TEST(LogStreamTest, FollowsAContainerIntoRotatedFilesAndResumesWithoutDuplicates) {
  DROVER_SKIP_WITHOUT_DOCKERD();
  testing::DockerdProcess dockerd;
  ASSERT_TRUE(dockerd.ok()) << dockerd.Log();
  asio::io_context io;
  asio::thread_pool pool(1);
  Engine engine(EndpointAddress(dockerd.endpoint()).value());
  ASSERT_TRUE(testing::Await(io, engine.Negotiate()).ok());
  testing::TempDir dir;
  ASSERT_TRUE(test::ImportBusybox(io, engine, dir).ok());
  const codec::Json config = {
      {"Image", "drover-test/busybox:1"},
      {"Cmd", {"/bin/sh", "-c", "echo out1; echo err1 >&2; sleep 1; echo out2"}},
      {"HostConfig", {{"NetworkMode", "none"}}}};
  absl::StatusOr<std::string> id = testing::Await(io, engine.CreateContainer("logs-1", config));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(testing::Await(io, engine.StartContainer(*id)).ok());

  const std::filesystem::path logdir = dir.path() / "logs";
  std::filesystem::create_directories(logdir);
  TaskLogConfig logs{.dir = logdir.string(),
                     .stdout_base = "web.stdout",
                     .stderr_base = "web.stderr",
                     .max_files = 2,
                     .max_file_size = 1 << 20};
  LogCursor last;
  absl::Status followed = testing::Await(
      io, FollowLogs(engine, *id, logs, LogCursor{}, pool, [&](LogCursor c) { last = c; }));
  ASSERT_TRUE(followed.ok()) << followed;
  EXPECT_EQ(testing::ReadFile(logdir / "web.stdout.0"), "out1\nout2\n");
  EXPECT_EQ(testing::ReadFile(logdir / "web.stderr.0"), "err1\n");
  EXPECT_GT(last.time, 0);
  EXPECT_EQ(last.count, 1);

  // Resumed from the cursor (as after an agent restart): nothing twice.
  LogCursor again = last;
  followed = testing::Await(
      io, FollowLogs(engine, *id, logs, last, pool, [&](LogCursor c) { again = c; }));
  ASSERT_TRUE(followed.ok()) << followed;
  EXPECT_EQ(testing::ReadFile(logdir / "web.stdout.0"), "out1\nout2\n");
  EXPECT_EQ(again, last);
  EXPECT_EQ(testing::Await(io, FollowLogs(engine, "nope", logs, {}, pool, nullptr)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(testing::Await(io, FollowLogs(engine, "../x", logs, {}, pool, nullptr)).code(),
            absl::StatusCode::kInvalidArgument);

  // A line longer than Docker's 16 KiB frames (several frames at one time) arrives
  // whole, and resuming in the middle of its frames writes only the rest.
  const codec::Json long_line = {
      {"Image", "drover-test/busybox:1"},
      {"Cmd",
       {"/bin/busybox", "sh", "-c",
        "/bin/busybox head -c 100000 /dev/zero | /bin/busybox tr '\\0' a; echo; "
        "echo after"}},
      {"HostConfig", {{"NetworkMode", "none"}}}};
  absl::StatusOr<std::string> big = testing::Await(io, engine.CreateContainer("logs-2", long_line));
  ASSERT_TRUE(big.ok()) << big.status();
  ASSERT_TRUE(testing::Await(io, engine.StartContainer(*big)).ok());
  EXPECT_EQ(testing::Await(io, engine.WaitContainer(*big)).value_or(-1), 0);
  TaskLogConfig big_logs = logs;
  big_logs.stdout_base = "big.stdout";
  big_logs.stderr_base = "big.stderr";
  std::vector<LogCursor> cursors;
  followed = testing::Await(
      io, FollowLogs(engine, *big, big_logs, {}, pool, [&](LogCursor c) { cursors.push_back(c); }));
  ASSERT_TRUE(followed.ok()) << followed;
  EXPECT_EQ(testing::ReadFile(logdir / "big.stdout.0"), std::string(100000, 'a') + "\nafter\n");
  // From the first frame alone: the rest of the line, and the next one, once each.
  big_logs.stdout_base = "rest.stdout";
  const LogCursor after_first{.time = cursors.empty() ? 0 : cursors.front().time, .count = 1};
  followed = testing::Await(io, FollowLogs(engine, *big, big_logs, after_first, pool, nullptr));
  ASSERT_TRUE(followed.ok()) << followed;
  const std::string rest = testing::ReadFile(logdir / "rest.stdout.0");
  EXPECT_TRUE(rest.ends_with(std::string(1000, 'a') + "\nafter\n")) << rest.size();
  EXPECT_LT(rest.size(), 100000u + 7u);
  EXPECT_TRUE(testing::Await(io, engine.RemoveContainer(*big, true)).ok());
  EXPECT_TRUE(testing::Await(io, engine.RemoveContainer(*id, true)).ok());
  pool.join();
}

}  // namespace
}  // namespace drover::drivers::docker
