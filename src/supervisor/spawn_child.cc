#include "supervisor/spawn_child.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "supervisor/raw_syscall.h"

namespace drover::supervisor {

#if !defined(__x86_64__) && !defined(__aarch64__)
long raw::Call(long n, long a, long b, long c, long d, long e, long f) {
  const long r = syscall(n, a, b, c, d, e, f);
  return r < 0 ? -errno : r;
}
#endif

namespace {

using raw::Call;

template <typename T>
long Arg(T* p) {
  return reinterpret_cast<long>(p);
}

[[noreturn]] void Exit(int code) {
  for (;;)
    Call(SYS_exit_group, code);
}

// Reports `what` and the error `err` on the report pipe and exits. No snprintf, no
// locale: strerrordesc_np is a table lookup.
[[noreturn]] void ChildFail(int report, const char* what, int err) {
  char msg[256];
  size_t n = 0;
  auto append = [&](const char* text) {
    while (*text != '\0' && n < sizeof msg)
      msg[n++] = *text++;
  };
  append(what);
  append(": ");
  const char* desc = strerrordesc_np(err);
  append(desc != nullptr ? desc : "unknown error");
  Call(SYS_write, report, Arg(msg), static_cast<long>(n));
  Exit(127);
}

// A raw call's result, or the child fails with `what`.
long Must(long result, int report, const char* what) {
  if (result < 0)
    ChildFail(report, what, static_cast<int>(-result));
  return result;
}

long Close(int fd) {
  return Call(SYS_close, fd);
}

long Write(int fd, const char* text, size_t n) {
  long r;
  do {
    r = Call(SYS_write, fd, Arg(text), static_cast<long>(n));
  } while (r == -EINTR);
  return r;
}

// dup2 through dup3, which refuses equal numbers.
long Dup2(int from, int to) {
  if (from == to)
    return Call(SYS_fcntl, from, F_SETFD, 0);  // dup2 would keep it open across exec
  return Call(SYS_dup3, from, to, 0);
}

// Closes every descriptor from `low` up, but `keep`: common::CloseDescriptorsFrom
// through raw calls.
void CloseFrom(int low, int keep) {
  auto close_range = [](unsigned first, unsigned last) {
    return first > last || Call(SYS_close_range, first, last, 0) == 0;
  };
  const unsigned lo = static_cast<unsigned>(low);
  const unsigned k = static_cast<unsigned>(keep);
  if (keep >= low ? close_range(lo, k - 1) && close_range(k + 1, ~0U) : close_range(lo, ~0U))
    return;
  rlimit limit{};
  long max = 1 << 20;
  if (Call(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, Arg(&limit)) == 0 &&
      limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < static_cast<rlim_t>(max)) {
    max = static_cast<long>(limit.rlim_cur);
  }
  for (long fd = low; fd < max; ++fd) {
    if (fd != keep)
      Close(static_cast<int>(fd));
  }
}

// In a child cloned with our descriptor table: takes its own copy of the low slots
// (see SpawnSlots in process.cc) and says so with "r" on the report pipe.
void TakeOwnTable(const ChildPlan& c) {
  if (Call(SYS_close_range, c.shared_table_end, ~0U, CLOSE_RANGE_UNSHARE) != 0)
    Must(Call(SYS_unshare, CLONE_FILES), c.report, "unshare descriptors");
  if (Write(c.report, "r", 1) != 1)
    Exit(127);
  Close(c.go_write_original);  // EBADF when it was above the copy
}

// Every signal back to its default action, then none blocked. In this order: the
// parent of a CLONE_VM child blocks every signal around the clone, so that none runs
// one of its handlers here, on its memory.
void ResetSignals() {
  // The kernel's struct sigaction, all zero: SIG_DFL, no flags, an empty mask.
  struct {
    unsigned long words[4];
  } dfl{};
  for (int sig = 1; sig < NSIG; ++sig)
    Call(SYS_rt_sigaction, sig, Arg(&dfl), 0, NSIG / 8);  // SIGKILL's fails: none to reset
  const unsigned long none = 0;
  Call(SYS_rt_sigprocmask, SIG_SETMASK, Arg(&none), 0, NSIG / 8);
}

// In a new network namespace: brings the loopback interface up.
bool LoopbackUp() {
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return false;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, "lo", 3);
  bool ok = ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  close(s);
  return ok;
}

// Namespaces, chroot and the loopback: libc calls, in a forked child only.
void Isolate(const ChildPlan& c) {
  if (const char* failed = EnterIsolation(*c.isolation); failed != nullptr)
    ChildFail(c.report, failed, errno);
  if (c.spec->isolation.network_none && !LoopbackUp())
    ChildFail(c.report, "bring up loopback", errno);
}

void DropCredentials(const ChildPlan& c) {
  const Credentials& creds = c.creds;
  // Raw: libc's set*id would signal every thread of the process it thinks it is in.
  if (creds.change) {
    Must(Call(SYS_setgroups, static_cast<long>(creds.groups.size()), Arg(creds.groups.data())),
         c.report, "setgroups");
  }
  if (creds.change || creds.change_group)
    Must(Call(SYS_setgid, creds.gid), c.report, "setgid");
  if (creds.change)
    Must(Call(SYS_setuid, creds.uid), c.report, "setuid");
}

}  // namespace

namespace {

// Whether our own oom_score_adj is 0, what the child sets for the task. Linux keeps
// oom_score_adj equal across processes sharing an mm (other than a vfork child): a
// CLONE_VM child setting 0 would set the supervisor's -1000 to 0 as well.
bool OwnOomScoreAdjIsZero() {
  char buf[16] = {};
  const int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  return n > 0 && std::strncmp(buf, "0\n", 2) == 0;
}

}  // namespace

bool MayShareMemory(const ChildPlan& c) {
  // The one libc function such a child may call (ChildFail), bound here: the binary is
  // lazily bound, and a first call would run the dynamic linker's resolver in the child.
  static const char* const kBound = strerrordesc_np(0);
  (void)kBound;
  return raw::kAvailable && !c.isolation && c.hardening == nullptr && OwnOomScoreAdjIsZero();
}

void RunChild(const ChildPlan& c) {
  const SpawnSpec& spec = *c.spec;
  const int report = c.report;
  if (c.shared_table_end > 0)
    TakeOwnTable(c);
  Close(c.go_write_fd);
  char go = 0;
  long got;
  do {
    got = Call(SYS_read, c.go_fd, Arg(&go), 1);
  } while (got == -EINTR);
  if (got != 1)
    Exit(127);  // the supervisor gave up on this task: never run it untracked
  // The supervisor and its reaper are the last processes the kernel should kill when
  // memory runs out; a task is an ordinary one.
  if (const long fd =
          Call(SYS_openat, AT_FDCWD, Arg("/proc/self/oom_score_adj"), O_WRONLY | O_CLOEXEC);
      fd >= 0) {
    Write(static_cast<int>(fd), "0", 1);  // refused: the task runs all the same
    Close(static_cast<int>(fd));
  }
  Must(Call(SYS_setsid), report, "setsid");
  // Join the cgroup first, so everything the task does is accounted and limited.
  for (int fd : *c.cgroup_fds) {
    if (const long r = Write(fd, "0", 1); r != 1)
      ChildFail(report, "join cgroup", r < 0 ? static_cast<int>(-r) : EIO);
  }
  ResetSignals();
  const int devnull = static_cast<int>(
      Must(Call(SYS_openat, AT_FDCWD, Arg("/dev/null"), O_RDWR), report, "open /dev/null"));
  Must(Dup2(devnull, 0), report, "dup2");
  Must(Dup2(c.stdout_fd >= 0 ? c.stdout_fd : devnull, 1), report, "dup2");
  Must(Dup2(c.stderr_fd >= 0 ? c.stderr_fd : devnull, 2), report, "dup2");
  if (c.isolation)
    Isolate(c);
  if (!spec.cwd.empty())
    Must(Call(SYS_chdir, Arg(spec.cwd.c_str())), report, "chdir");
  if (spec.umask >= 0)
    Call(SYS_umask, spec.umask);
  // Limits before privileges are dropped: raising a hard limit needs them.
  for (const auto& [resource, limit] : c.limits)
    Must(Call(SYS_prlimit64, 0, resource, Arg(&limit), 0), report, "setrlimit");
  // Capabilities go while the child still has the one that allows it (CAP_SETPCAP).
  if (c.hardening != nullptr) {
    if (const char* failed = RestrictPrivileges(*c.hardening); failed != nullptr)
      ChildFail(report, failed, errno);
  }
  DropCredentials(c);
  // Nothing of the supervisor's leaks into the task: above all not its sockets, through
  // which a task could ask for anything. The report pipe closes at exec (CLOEXEC).
  CloseFrom(3, report);
  // Last: the filter refuses calls the setup above needs (mount).
  if (c.hardening != nullptr) {
    if (const char* failed = LoadSeccomp(*c.hardening); failed != nullptr)
      ChildFail(report, failed, errno);
  }
  const long r = Call(SYS_execve, Arg(c.path.c_str()), Arg(c.argv.data()), Arg(c.envp.data()));
  ChildFail(report, "exec", static_cast<int>(-r));
}

int RunChildEntry(void* arg) {
  RunChild(*static_cast<const ChildPlan*>(arg));
}

}  // namespace drover::supervisor
