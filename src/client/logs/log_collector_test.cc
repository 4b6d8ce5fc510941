#include "client/logs/log_collector.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::logs {

using supervisor::FileRotator;
namespace {

namespace fs = std::filesystem;

asio::awaitable<void> StopAndFlag(LogCollector* c, bool* done) {
  co_await c->Stop();
  *done = true;
}

// Writes `data` into `fd` and stops `c` in the same handler, with no I/O processed in
// between: the bytes are still in the FIFO when Stop begins, so only the drain can
// collect them.
asio::awaitable<void> WriteThenStop(int fd, std::string data, LogCollector* c, bool* done) {
  const ssize_t n = ::write(fd, data.data(), data.size());
  EXPECT_EQ(n, static_cast<ssize_t>(data.size()));
  co_await c->Stop();
  *done = true;
}

// A log dir, a loop, a one-thread blocking pool and a collector for
// <dir>/.web.stdout.fifo writing <dir>/web.stdout.<N>. Stops the collector on
// destruction if a test did not (the collector must not be destroyed before).
struct Harness {
  explicit Harness(int max_files = 3, int64_t max_size = 1 << 20) {
    auto rotator = FileRotator::Open(tmp.path(), "web.stdout", max_files, max_size);
    EXPECT_TRUE(rotator.ok()) << rotator.status();
    if (!rotator.ok())
      return;
    auto c = LogCollector::Start(io.get_executor(), pool, fifo, std::move(*rotator));
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok())
      collector = std::move(*c);
  }
  ~Harness() {
    if (collector != nullptr && !stopped)
      Stop();
    if (writer >= 0)
      ::close(writer);
    pool.join();
  }

  // Opens the FIFO for writing the way a task does: a blocking O_WRONLY open, which
  // returns at once because the collector holds the FIFO open.
  int OpenWriter() {
    writer = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    EXPECT_GE(writer, 0) << "open " << fifo << ": " << errno;
    return writer;
  }
  void Write(const std::string& data) {
    ASSERT_EQ(::write(writer, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  }
  std::string Log(int n = 0) const {
    return testing::ReadFile(tmp.path() / ("web.stdout." + std::to_string(n)));
  }
  bool WaitLog(const std::string& want, int n = 0) {
    return testing::RunUntil(io, [&] { return Log(n) == want; });
  }
  bool Stop() {
    bool done = false;
    asio::co_spawn(io, StopAndFlag(collector.get(), &done), asio::detached);
    stopped = testing::RunUntil(io, [&] { return done; });
    return stopped;
  }

  testing::TempDir tmp;
  const fs::path fifo = tmp.path() / ".web.stdout.fifo";
  asio::io_context io;
  asio::thread_pool pool{1};
  int writer = -1;
  bool stopped = false;
  std::unique_ptr<LogCollector> collector;  // last: destroyed first
};

TEST(LogCollectorTest, CollectsInOrder) {
  Harness h;
  ASSERT_NE(h.collector, nullptr);
  EXPECT_EQ(h.collector->fifo_path(), h.fifo);
  struct stat st {};
  ASSERT_EQ(::lstat(h.fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0666u);

  ASSERT_GE(h.OpenWriter(), 0);
  h.Write("hello ");
  h.Write("world\n");
  EXPECT_TRUE(h.WaitLog("hello world\n"));

  // Several chunks (each below the pipe's capacity, as this thread also runs the loop).
  std::string want = "hello world\n";
  for (int i = 0; i < 4; ++i) {
    const std::string part(40000, static_cast<char>('a' + i));
    h.Write(part);
    want += part;
    EXPECT_TRUE(h.WaitLog(want)) << "chunk " << i;
  }
  EXPECT_TRUE(h.Stop());
  EXPECT_EQ(h.Log(), want);
}

TEST(LogCollectorTest, DrainsOnStop) {
  Harness h;
  ASSERT_NE(h.collector, nullptr);
  ASSERT_GE(h.OpenWriter(), 0);
  h.Write("first\n");
  ASSERT_TRUE(h.WaitLog("first\n"));
  bool done = false;
  asio::co_spawn(h.io, WriteThenStop(h.writer, "last words\n", h.collector.get(), &done),
                 asio::detached);
  ASSERT_TRUE(testing::RunUntil(h.io, [&] { return done; }));
  h.stopped = true;
  EXPECT_EQ(h.Log(), "first\nlast words\n");
  EXPECT_FALSE(fs::exists(h.fifo));
}

TEST(LogCollectorTest, KeepsCollectingAcrossWriterRestarts) {
  Harness h;
  ASSERT_NE(h.collector, nullptr);
  ASSERT_GE(h.OpenWriter(), 0);
  h.Write("run 1\n");
  ASSERT_TRUE(h.WaitLog("run 1\n"));
  // The task exits: its write end closes. We hold another, so no EOF.
  ::close(h.writer);
  h.writer = -1;
  h.io.restart();
  h.io.poll();
  ASSERT_GE(h.OpenWriter(), 0);  // restarted task
  h.Write("run 2\n");
  EXPECT_TRUE(h.WaitLog("run 1\nrun 2\n"));
  EXPECT_TRUE(h.Stop());
  EXPECT_EQ(h.Log(), "run 1\nrun 2\n");
}

TEST(LogCollectorTest, RotatesThroughTheRotator) {
  Harness h(/*max_files=*/2, /*max_size=*/8);
  ASSERT_NE(h.collector, nullptr);
  ASSERT_GE(h.OpenWriter(), 0);
  h.Write("aaaaaaaabbbbbbbbcc");
  ASSERT_TRUE(h.WaitLog("cc", 2));
  EXPECT_EQ(h.Log(1), "bbbbbbbb");
  EXPECT_FALSE(fs::exists(h.tmp.path() / "web.stdout.0"));  // beyond max_files
  EXPECT_TRUE(h.Stop());
}

TEST(LogCollectorTest, StopRemovesFifoAndIsIdempotent) {
  Harness h;
  ASSERT_NE(h.collector, nullptr);
  EXPECT_TRUE(fs::exists(h.fifo));
  EXPECT_TRUE(h.Stop());
  EXPECT_FALSE(fs::exists(h.fifo));
  EXPECT_TRUE(h.Stop());
  EXPECT_TRUE(fs::exists(h.tmp.path() / "web.stdout.0"));  // the logs stay
}

TEST(LogCollectorTest, ReusesAnExistingFifo) {
  testing::TempDir tmp;
  const fs::path fifo = tmp.path() / "web.stdout.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  asio::io_context io;
  asio::thread_pool pool(1);
  auto rotator = FileRotator::Open(tmp.path(), "web.stdout", 2, 100);
  ASSERT_TRUE(rotator.ok()) << rotator.status();
  auto c = LogCollector::Start(io.get_executor(), pool, fifo, std::move(*rotator));
  ASSERT_TRUE(c.ok()) << c.status();
  bool done = false;
  asio::co_spawn(io, StopAndFlag(c->get(), &done), asio::detached);
  EXPECT_TRUE(testing::RunUntil(io, [&] { return done; }));
  EXPECT_FALSE(fs::exists(fifo));
}

TEST(LogCollectorTest, StartOnRegularFileFails) {
  testing::TempDir tmp;
  const fs::path fifo = tmp.path() / "web.stdout.fifo";
  std::ofstream(fifo) << "not a fifo";
  asio::io_context io;
  asio::thread_pool pool(1);
  auto rotator = FileRotator::Open(tmp.path(), "web.stdout", 2, 100);
  ASSERT_TRUE(rotator.ok()) << rotator.status();
  auto c = LogCollector::Start(io.get_executor(), pool, fifo, std::move(*rotator));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status())) << c.status();
  EXPECT_NE(c.status().message().find(fifo.string()), std::string::npos) << c.status();
  EXPECT_EQ(testing::ReadFile(fifo), "not a fifo");
}

}  // namespace
}  // namespace drover::logs
