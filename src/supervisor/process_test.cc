#include "supervisor/process.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace drover::supervisor {
namespace {

SpawnSpec Shell(const std::string& script) {
  SpawnSpec spec;
  spec.task_id = "t";
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  return spec;
}

int WaitExit(int pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Descriptors held open by the "supervisor" (this test), at low and high numbers.
class HeldDescriptors {
 public:
  explicit HeldDescriptors(int count) {
    for (int i = 0; i < count; ++i)
      fds_.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
    // And one far above the rest, where a table copy would have to reach.
    fds_.push_back(fcntl(fds_.front(), F_DUPFD_CLOEXEC, 900));
  }
  ~HeldDescriptors() {
    for (int fd : fds_)
      close(fd);
  }

 private:
  std::vector<int> fds_;
};

// The child starts with stdin, stdout and stderr only, whatever the caller holds.
TEST(SpawnProcessTest, TheTaskInheritsOnlyItsStandardDescriptors) {
  ReserveSpawnSlots();
  testing::TempDir dir;
  HeldDescriptors held(100);
  const std::string out = (dir.path() / "out").string();
  const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(out_fd, 0);
  auto p = SpawnProcess(Shell("cd /proc/$$/fd && echo *"), out_fd, out_fd);
  close(out_fd);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(WaitExit(p->pid), 0);
  // 3 is the directory the shell's glob has open while it lists it: had anything else
  // been inherited, the glob's would be a higher number.
  EXPECT_EQ(ReadFile(out), "0 1 2 3\n");
}

// Each cgroup descriptor gets the child's "0", in order: through the low slots when
// they fit, through a plain fork when there are more than the slots hold.
class CgroupDescriptorsTest : public ::testing::TestWithParam<int> {};

TEST_P(CgroupDescriptorsTest, EachGetsTheChildsJoin) {
  HeldDescriptors held(50);
  std::vector<int> reads;
  std::vector<int> writes;
  for (int i = 0; i < GetParam(); ++i) {
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    reads.push_back(fds[0]);
    writes.push_back(fds[1]);
  }
  SpawnedProcess seen;
  long shares_memory = -1;  // kcmp: 0 when the child's memory is ours
  auto p = SpawnProcess(Shell("exit 3"), -1, -1, writes, /*parent_reaps=*/false,
                        [&](const SpawnedProcess& sp) {
                          seen = sp;
                          shares_memory = syscall(SYS_kcmp, getpid(), sp.pid, KCMP_VM, 0, 0);
                          return absl::OkStatus();
                        });
  ASSERT_TRUE(p.ok()) << p.status();
  // Through the slots, the child shares our memory until execve (no page-table copy);
  // forked, it has a copy.
  ASSERT_GE(shares_memory, 0) << "kcmp: " << strerror(errno);
  EXPECT_EQ(shares_memory == 0, GetParam() <= 11) << shares_memory;
  EXPECT_EQ(seen.pid, p->pid);
  EXPECT_EQ(seen.parent, getpid());
  EXPECT_EQ(seen.start_ticks, ReadProcessStat(p->pid).start_ticks);
  EXPECT_NE(seen.start_ticks, 0u);
  EXPECT_EQ(WaitExit(p->pid), 3);
  for (size_t i = 0; i < reads.size(); ++i) {
    close(writes[i]);
    char buf[4] = {};
    EXPECT_EQ(read(reads[i], buf, sizeof buf), 1) << "descriptor " << i;
    EXPECT_EQ(buf[0], '0') << "descriptor " << i;
    close(reads[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(SlotsAndFork, CgroupDescriptorsTest, ::testing::Values(1, 11, 40));

TEST(SpawnProcessTest, AFailedRecordMeansTheTaskNeverRuns) {
  testing::TempDir dir;
  const std::string marker = (dir.path() / "ran").string();
  auto p = SpawnProcess(Shell("touch " + marker), -1, -1, {}, /*parent_reaps=*/false,
                        [](const SpawnedProcess&) { return absl::InternalError("disk full"); });
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("disk full"), std::string::npos) << p.status();
  EXPECT_FALSE(std::ifstream(marker).good());
}

// A child that fails a step after the clone reports that step, and the next spawn (on
// the same stack, when the child shared our memory) is unaffected.
TEST(SpawnProcessTest, AFailedStepInTheChildIsReportedAndTheNextSpawnWorks) {
  ReserveSpawnSlots();
  for (int i = 0; i < 3; ++i) {
    SpawnSpec bad = Shell("exit 0");
    bad.cwd = "/nonexistent/dir";
    auto p = SpawnProcess(bad, -1, -1);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find("chdir: No such file or directory"), std::string::npos)
        << p.status();
    auto good = SpawnProcess(Shell("exit 4"), -1, -1);
    ASSERT_TRUE(good.ok()) << good.status();
    EXPECT_EQ(WaitExit(good->pid), 4);
  }
}

// The caller's handlers never run in the child: a signal the caller handles has its
// default action on the task.
TEST(SpawnProcessTest, TheTaskHasDefaultSignalActions) {
  ReserveSpawnSlots();
  struct sigaction handled = {};
  handled.sa_handler = [](int) {};
  struct sigaction old_usr1 = {};
  ASSERT_EQ(sigaction(SIGUSR1, &handled, &old_usr1), 0);
  auto p = SpawnProcess(Shell("kill -USR1 $$; exit 0"), -1, -1);
  sigaction(SIGUSR1, &old_usr1, nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  int status = 0;
  ASSERT_EQ(waitpid(p->pid, &status, 0), p->pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1) << status;
}

TEST(SpawnProcessTest, AMissingBinaryIsAnError) {
  SpawnSpec spec;
  spec.task_id = "t";
  spec.argv = {"/nonexistent/binary"};
  auto p = SpawnProcess(spec, -1, -1);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("/nonexistent/binary"), std::string::npos) << p.status();
}

TEST(ReadProcessStatTest, ParsesPastACommandNameWithParentheses) {
  testing::TempDir dir;
  const std::string odd = (dir.path() / "a) b (c").string();
  ASSERT_EQ(symlink("/bin/sleep", odd.c_str()), 0);
  SpawnSpec spec;
  spec.task_id = "t";
  spec.argv = {odd, "30"};
  auto p = SpawnProcess(spec, -1, -1);
  ASSERT_TRUE(p.ok()) << p.status();
  const ProcessStat st = ReadProcessStat(p->pid);
  EXPECT_EQ(st.parent, getpid());
  EXPECT_EQ(st.start_ticks, p->start_ticks);
  kill(p->pid, SIGKILL);
  WaitExit(p->pid);
  EXPECT_EQ(ReadProcessStat(p->pid).start_ticks, 0u);
}

}  // namespace
}  // namespace drover::supervisor
