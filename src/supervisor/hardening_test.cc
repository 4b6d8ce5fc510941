// The seccomp filter, loaded in a forked child: what it refuses answers EPERM (or, for
// clone3, ENOSYS so libc falls back to clone), and ordinary calls still work.
#include "supervisor/hardening.h"

#include <linux/io_uring.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <gtest/gtest.h>

namespace drover::supervisor {
namespace {

// Runs `call` in a child under the filter; its errno (0 if it succeeded), or -1 if the
// child could not load the filter or died.
int ErrnoUnderFilter(const Hardening& h, long (*call)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Without CAP_SYS_ADMIN a filter needs no_new_privs; the test may run as anyone.
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || LoadSeccomp(h) != nullptr)
      _exit(255);
    errno = 0;
    const long rc = call();
    _exit(rc < 0 ? (errno & 0x7f) : 0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) == 255) {
    return -1;
  }
  return WEXITSTATUS(status);
}

TEST(HardeningTest, TheFilterRefusesEscapesAndAllowsTheRest) {
  auto h = PrepareHardening();
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(ErrnoUnderFilter(*h,
                             [] {
                               io_uring_params p{};
                               return syscall(SYS_io_uring_setup, 1, &p);
                             }),
            EPERM);
  EXPECT_EQ(ErrnoUnderFilter(*h, [] { return syscall(SYS_keyctl, 0, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(*h, [] { return syscall(SYS_bpf, 0, nullptr, 0); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(*h, [] { return syscall(SYS_unshare, CLONE_NEWUSER); }), EPERM);
  EXPECT_EQ(ErrnoUnderFilter(*h, [] { return syscall(SYS_clone3, nullptr, 0); }), ENOSYS);
  EXPECT_EQ(ErrnoUnderFilter(*h, [] { return static_cast<long>(getppid() > 0 ? 0 : -1); }), 0);
}

}  // namespace
}  // namespace drover::supervisor
