#include "drivers/process_stats.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::drivers {
namespace {

bool Holds(const std::vector<ProcSample>& samples, int pid) {
  return std::any_of(samples.begin(), samples.end(),
                     [pid](const ProcSample& s) { return s.pid == pid; });
}

// A single-threaded process's children are found from its main thread's list alone.
TEST(ProcessTreeTest, FindsGrandchildrenOfASingleThreadedProcess) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(pipe_fds[1], &grandchild, sizeof grandchild);
    pause();
    _exit(0);
  }
  pid_t grandchild = 0;
  ASSERT_EQ(read(pipe_fds[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  const auto samples = ProcessTreeSamples(child);
  EXPECT_EQ(samples.size(), 2u);
  EXPECT_TRUE(Holds(samples, child));
  EXPECT_TRUE(Holds(samples, grandchild));
  EXPECT_EQ(samples[0].num_threads, 1u);
  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

// Kept-open files are read again from the start: a child started after they were
// opened is seen, and once the process is reaped they read nothing.
TEST(ProcessTreeTest, KeptOpenFilesFollowTheProcessAndEndWithIt) {
  int go[2];
  int told[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(told), 0);
  const pid_t child = fork();
  if (child == 0) {
    char c = 0;
    (void)!read(go[0], &c, 1);  // start the grandchild only when told
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(told[1], &grandchild, sizeof grandchild);
    pause();
    _exit(0);
  }
  const ProcFiles files(child);
  ASSERT_GE(files.stat_fd(), 0);
  ASSERT_GE(files.children_fd(), 0);
  auto samples = ProcessTreeSamples(child, &files);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].pid, child);
  EXPECT_EQ(samples[0].start_ticks, ReadProcSample(child)->start_ticks);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  pid_t grandchild = 0;
  ASSERT_EQ(read(told[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  samples = ProcessTreeSamples(child, &files);
  EXPECT_EQ(samples.size(), 2u);
  EXPECT_TRUE(Holds(samples, grandchild));
  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(ProcessTreeSamples(child, &files).empty());
  for (int fd : {go[0], go[1], told[0], told[1]})
    close(fd);
}

// In a process of several threads, a child started by another thread than the main one
// is listed under that thread: every thread's list is read.
TEST(ProcessTreeTest, FindsAChildStartedByAnotherThread) {
  std::atomic<pid_t> child{-1};
  std::atomic<bool> stop{false};
  // The starter stays alive while the tree is read: its child is on its list only.
  std::thread starter([&child, &stop] {
    const pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    child = pid;
    while (!stop)
      std::this_thread::yield();
  });
  ASSERT_TRUE(testing::WaitFor([&] { return child.load() != -1; }));
  const auto samples = ProcessTreeSamples(getpid());
  stop = true;
  starter.join();
  ASSERT_GT(child.load(), 0);
  EXPECT_TRUE(Holds(samples, getpid()));
  EXPECT_TRUE(Holds(samples, child.load()));
  kill(child.load(), SIGKILL);
  waitpid(child.load(), nullptr, 0);
}

}  // namespace
}  // namespace drover::drivers
