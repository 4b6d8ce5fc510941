#include "supervisor/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "common/fds.h"
#include "supervisor/hardening.h"
#include "supervisor/isolation.h"
#include "supervisor/spawn_child.h"

namespace drover::supervisor {

namespace {

std::string Errno(int err) {
  return std::strerror(err);
}

// Resolves a bare command name through PATH (from the task's env) the way execvp
// would, so the error for a missing binary names it before anything is forked.
absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           const std::map<std::string, std::string>& env,
                                           const std::string& cwd) {
  if (command.find('/') != std::string::npos) {
    std::string path = command;
    if (command[0] != '/' && !cwd.empty())
      path = cwd + "/" + command;
    return path;
  }
  auto it = env.find("PATH");
  const std::string path_var =
      it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  std::stringstream dirs(path_var);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty())
      continue;
    const std::string candidate = dir + "/" + command;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return absl::NotFoundError("executable \"" + command + "\" not found in PATH");
}

// The command of an isolated task: an absolute path inside its root (relative ones
// from its cwd), or a name looked up in its PATH, checked through the binds and beneath
// the root, never following a link the task made out of it (CheckInside).
absl::StatusOr<std::string> ResolveInRoot(const SpawnSpec& spec) {
  const std::string& command = spec.argv[0];
  if (command.find('/') != std::string::npos) {
    std::string inside = command;
    if (command[0] != '/')
      inside = (spec.cwd.empty() ? std::string("/") : spec.cwd + "/") + command;
    if (CheckInside(spec.isolation, inside) == InsideCheck::kMissing)
      return absl::NotFoundError("failed to start \"" + inside + "\": " + Errno(ENOENT));
    return inside;
  }
  auto it = spec.env.find("PATH");
  const std::string path_var = it != spec.env.end()
                                   ? it->second
                                   : "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
  std::stringstream dirs(path_var);
  std::string unknown;  // a candidate only exec can judge
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty() || dir[0] != '/')
      continue;
    const std::string candidate = dir + "/" + command;
    const InsideCheck check = CheckInside(spec.isolation, candidate);
    if (check == InsideCheck::kExecutable)
      return candidate;
    if (check == InsideCheck::kUnknown && unknown.empty())
      unknown = candidate;
  }
  if (!unknown.empty())
    return unknown;
  return absl::NotFoundError("executable \"" + command + "\" not found in PATH");
}

absl::StatusOr<int> RlimitResource(const std::string& name) {
  static const std::map<std::string, int> kResources = {
      {"as", RLIMIT_AS},         {"core", RLIMIT_CORE},   {"cpu", RLIMIT_CPU},
      {"data", RLIMIT_DATA},     {"fsize", RLIMIT_FSIZE}, {"memlock", RLIMIT_MEMLOCK},
      {"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC}, {"stack", RLIMIT_STACK}};
  auto it = kResources.find(name);
  if (it == kResources.end())
    return absl::InvalidArgumentError("unknown rlimit resource \"" + name + "\"");
  return it->second;
}

absl::StatusOr<Credentials> LookupUser(const std::string& user) {
  Credentials c;
  if (user.empty())
    return c;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const int err = getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (err != 0 || found == nullptr) {
    return absl::NotFoundError("user \"" + user + "\" not found");
  }
  c.change = true;
  c.uid = pw.pw_uid;
  c.gid = pw.pw_gid;
  c.name = user;
  int n = 32;
  c.groups.resize(static_cast<size_t>(n));
  if (getgrouplist(user.c_str(), c.gid, c.groups.data(), &n) < 0) {
    c.groups.resize(static_cast<size_t>(n));
    getgrouplist(user.c_str(), c.gid, c.groups.data(), &n);
  }
  c.groups.resize(static_cast<size_t>(std::max(n, 0)));
  return c;
}

void CloseIfOpen(int& fd) {
  if (fd >= 0)
    close(fd);
  fd = -1;
}

}  // namespace

ProcessStat ReadProcessStat(int pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {};
  char buf[1024];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0)
    return {};
  buf[n] = '\0';
  // The command name (field 2) may contain spaces and parentheses: skip past the last
  // ')'. Field 3 (the state) follows it, then the parent (4); start time is field 22.
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr)
    return {};
  const char* p = close_paren + 1;
  ProcessStat st;
  for (int field = 3; field <= 22; ++field) {
    while (*p == ' ')
      ++p;
    if (*p == '\0')
      return {};
    if (field == 4)
      st.parent = static_cast<int>(std::strtol(p, nullptr, 10));
    else if (field == 22)
      st.start_ticks = std::strtoull(p, nullptr, 10);
    while (*p != ' ' && *p != '\0')
      ++p;
  }
  return st;
}

uint64_t ProcessStartTicks(int pid) {
  return ReadProcessStat(pid).start_ticks;
}

bool IsReaper(int pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name == "drover-reaper";
}

int ParentOf(int pid) {
  return ReadProcessStat(pid).parent;
}

bool ReaperOf(int pid) {
  const int parent = ParentOf(pid);
  return parent > 1 && IsReaper(parent);
}

int PidfdOpen(int pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

namespace {

// Descriptor numbers kept low for spawning. A forked child inherits a copy of every
// descriptor the supervisor holds (about six per task: log files, their directories,
// FIFOs) and closes them all before exec; with 1,000 tasks that copy and those closes
// were most of a spawn's cost. Instead the child is cloned sharing our descriptor
// table (CLONE_FILES) and first takes a private copy of only the descriptors below
// `end` (close_range with CLOSE_RANGE_UNSHARE copies nothing above). What it needs is
// duplicated into these slots just before the clone; in between, they hold a
// placeholder.
constexpr size_t kSpawnSlots = 16;

struct SpawnSlots {
  bool ok = false;
  int placeholder = -1;
  int fds[kSpawnSlots] = {};
  int end = 0;  // one past the highest slot
};

SpawnSlots& Slots() {
  static SpawnSlots slots = [] {
    SpawnSlots s;
    s.placeholder = open("/dev/null", O_PATH | O_CLOEXEC);
    if (s.placeholder < 0)
      return s;
    for (size_t i = 0; i < kSpawnSlots; ++i) {
      // Never 0-2: the child moves its output onto them.
      s.fds[i] = fcntl(s.placeholder, F_DUPFD_CLOEXEC, 3);
      if (s.fds[i] < 0) {
        for (size_t j = 0; j < i; ++j)
          close(s.fds[j]);
        close(s.placeholder);
        return SpawnSlots{};
      }
      s.end = std::max(s.end, s.fds[i] + 1);
    }
    s.ok = true;
    return s;
  }();
  return slots;
}

// Fills `c` (in place: argv and envp point into it).
absl::Status PlanChild(const SpawnSpec& spec, ChildPlan& c) {
  c.spec = &spec;
  if (spec.isolation.enabled) {
    // The command is a path inside the task's root: check it through the binds.
    auto inside = ResolveInRoot(spec);
    if (!inside.ok())
      return inside.status();
    c.path = *inside;
  } else {
    auto resolved = ResolveCommand(spec.argv[0], spec.env, spec.cwd);
    if (!resolved.ok())
      return resolved.status();
    c.path = *resolved;
    if (access(c.path.c_str(), F_OK) != 0)
      return absl::NotFoundError("failed to start \"" + c.path + "\": " + Errno(errno));
  }
  auto creds = LookupUser(spec.user);
  if (!creds.ok())
    return creds.status();
  c.creds = *std::move(creds);
  if (!spec.group.empty()) {
    std::vector<char> buf(16384);
    group gr{};
    group* found = nullptr;
    if (getgrnam_r(spec.group.c_str(), &gr, buf.data(), buf.size(), &found) != 0 ||
        found == nullptr) {
      return absl::NotFoundError("group \"" + spec.group + "\" not found");
    }
    c.creds.gid = gr.gr_gid;
    c.creds.change_group = true;
  }
  // An isolated task never runs as root, whatever its user is called: root could leave
  // the chroot and ignore every other limit.
  if (spec.isolation.enabled && (!c.creds.change || c.creds.uid == 0 || c.creds.gid == 0)) {
    return absl::PermissionDeniedError("an isolated task may not run as root (user \"" + spec.user +
                                       "\" is uid 0 or gid 0, or no user is set)");
  }
  for (const Rlimit& r : spec.rlimits) {
    auto resource = RlimitResource(r.resource);
    if (!resource.ok())
      return resource.status();
    c.limits.emplace_back(*resource, rlimit{.rlim_cur = r.soft, .rlim_max = r.hard});
  }
  if (spec.isolation.enabled) {
    auto prepared = PrepareIsolation(spec.isolation);
    if (!prepared.ok())
      return prepared.status();
    c.isolation = std::move(*prepared);
    // The same filter for every task: compiled once per supervisor.
    static const absl::StatusOr<Hardening> kHardening = PrepareHardening();
    if (!kHardening.ok())
      return kHardening.status();
    c.hardening = &*kHardening;
  }
  for (const auto& [k, v] : spec.env)
    c.env_strings.push_back(k + "=" + v);
  for (const auto& a : spec.argv)
    c.argv.push_back(const_cast<char*>(a.c_str()));
  c.argv.push_back(nullptr);
  for (auto& e : c.env_strings)
    c.envp.push_back(e.data());
  c.envp.push_back(nullptr);
  return absl::OkStatus();
}

}  // namespace

namespace {

// The child's first byte on the report pipe (1), or 0 if the child exited without
// writing one, or -1 on error.
ssize_t WaitReady(int report, int pidfd, char* ready) {
  for (;;) {
    pollfd fds[2] = {{.fd = report, .events = POLLIN, .revents = 0},
                     {.fd = pidfd, .events = POLLIN, .revents = 0}};
    const int n = poll(fds, pidfd >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    // The report first: the child may have written its byte and then died.
    if (fds[0].revents != 0 || pidfd < 0) {
      ssize_t got;
      do {
        got = read(report, ready, 1);
      } while (got < 0 && errno == EINTR);
      return got;
    }
    if (fds[1].revents != 0)
      return 0;
  }
  return -1;
}

// Once the child says it has its own descriptor table: OK; otherwise why it never will
// (it failed to unshare, and its message follows the first byte, or it died).
absl::Status AwaitOwnTable(int report, int pidfd) {
  char ready = 0;
  const ssize_t got = WaitReady(report, pidfd, &ready);
  if (got == 1 && ready == 'r')
    return absl::OkStatus();
  std::string text;
  if (got == 1) {
    char msg[256];
    text.assign(1, ready);
    if (const ssize_t n = read(report, msg, sizeof msg - 1); n > 0)
      text.append(msg, static_cast<size_t>(n));
  }
  return absl::InternalError("failed to start the task: " +
                             (text.empty() ? std::string("the child died") : text));
}

// Duplicates `needed` into the low slots, in order. Returns how many are there: all of
// them, or 0 (nothing left in the slots) when they do not fit or a dup fails.
size_t PlaceInSlots(const SpawnSlots& slots, const std::vector<int>& needed) {
  if (!slots.ok || needed.size() > kSpawnSlots)
    return 0;
  size_t placed = 0;
  while (placed < needed.size() &&
         dup3(needed[placed], slots.fds[placed], O_CLOEXEC) == slots.fds[placed]) {
    ++placed;
  }
  if (placed == needed.size())
    return placed;
  for (size_t i = 0; i < placed; ++i)
    dup3(slots.placeholder, slots.fds[i], O_CLOEXEC);
  return 0;
}

// Puts the placeholder back in the first `placed` slots.
void ReleaseSlots(const SpawnSlots& slots, size_t& placed) {
  for (size_t i = 0; i < placed; ++i)
    dup3(slots.placeholder, slots.fds[i], O_CLOEXEC);
  placed = 0;
}

// clone() without a new stack behaves as fork() does. `pidfd` receives a descriptor of
// the child (CLONE_PIDFD; -1 where the kernel has none): unlike its pid, it can never
// name another process, even once the child is gone and collected.
pid_t CloneOrFork(unsigned long flags, int* pidfd) {
  *pidfd = -1;
  long pid = syscall(SYS_clone, flags | CLONE_PIDFD, nullptr, pidfd, nullptr, nullptr);
  if (pid < 0 && errno == EINVAL)  // before Linux 5.2
    pid = syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
  return static_cast<pid_t>(pid);
}

// The stack of a child that shares our memory (CLONE_VM). The child runs on it from the
// clone to execve, so it is unmapped (or kept for the next child) only once the child
// is known to be past execve or gone; a stack whose child cannot be shown gone is left
// mapped rather than risk the child running on freed memory.
class ChildStack {
 public:
  static ChildStack Take() {
    ChildStack s;
    if (spare_ != nullptr) {
      s.base_ = std::exchange(spare_, nullptr);
      return s;
    }
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    // The lowest page is a guard: an overflow faults rather than write below.
    if (p != MAP_FAILED && mprotect(p, kGuard, PROT_NONE) == 0)
      s.base_ = p;
    else if (p != MAP_FAILED)
      munmap(p, kSize);
    return s;
  }

  bool ok() const { return base_ != nullptr; }
  void* top() const { return static_cast<char*>(base_) + kSize; }

  // REQUIRES: the child is past execve or gone.
  void Release() {
    if (base_ == nullptr)
      return;
    if (spare_ == nullptr)
      spare_ = base_;
    else
      munmap(base_, kSize);
    base_ = nullptr;
  }

  // Kills the child (which must never run its task from here) and releases the stack
  // once it has exited. Without a pidfd its end cannot be known: the stack stays.
  void ReleaseOnceGone(int pidfd) {
    if (pidfd >= 0) {
      syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
      pollfd p = {.fd = pidfd, .events = POLLIN, .revents = 0};
      int n;
      do {
        n = poll(&p, 1, -1);
      } while (n < 0 && errno == EINTR);
      if (n == 1)
        Release();
    }
    base_ = nullptr;
  }

 private:
  static constexpr size_t kSize = 128 << 10;
  static constexpr size_t kGuard = 4096;
  static inline void* spare_ = nullptr;  // one stack kept between spawns
  void* base_ = nullptr;
};

// A child on `stack`, sharing our memory and descriptor table. Every signal is blocked
// around the clone, so that none runs one of our handlers in the child; the child
// resets them before it unblocks any.
pid_t CloneSharingMemory(const ChildPlan& c, unsigned long flags, const ChildStack& stack,
                         int* pidfd) {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  *pidfd = -1;
  auto* plan = const_cast<ChildPlan*>(&c);
  pid_t pid = clone(&RunChildEntry, stack.top(), static_cast<int>(flags | CLONE_VM | CLONE_PIDFD),
                    plan, pidfd);
  if (pid < 0 && errno == EINVAL)  // before Linux 5.2
    pid = clone(&RunChildEntry, stack.top(), static_cast<int>(flags | CLONE_VM), plan);
  const int e = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = e;
  return pid;
}

}  // namespace

void ReserveSpawnSlots() {
  (void)Slots();
}

namespace {

// The two pipes between SpawnProcess and its child: `report` (the child's "r", then a
// failed step's message; its end means execve or exit) and `go` (see ChildPlan).
struct SpawnPipes {
  int report[2] = {-1, -1};
  int go[2] = {-1, -1};

  void Close() {
    for (int* fd : {&report[0], &report[1], &go[0], &go[1]})
      CloseIfOpen(*fd);
  }
};

// Duplicates what the child needs into the low slots (see SpawnSlots) and gives `c`
// their numbers. Returns how many slots hold something: 0 when they do not fit (the
// child then copies the whole table).
size_t MoveIntoSlots(const SpawnSlots& slots, const SpawnPipes& pipes,
                     const std::vector<int>& cgroup_fds, std::vector<int>& slotted_cgroup_fds,
                     ChildPlan& c) {
  std::vector<int> needed = {pipes.report[1], pipes.go[0], pipes.go[1]};
  for (int fd : {c.stdout_fd, c.stderr_fd}) {
    if (fd >= 0)
      needed.push_back(fd);
  }
  needed.insert(needed.end(), cgroup_fds.begin(), cgroup_fds.end());
  const size_t placed = PlaceInSlots(slots, needed);
  if (placed == 0)
    return 0;
  auto slot_of = [&](int fd) {
    return fd < 0 ? -1 : slots.fds[std::find(needed.begin(), needed.end(), fd) - needed.begin()];
  };
  c.report = slot_of(pipes.report[1]);
  c.go_fd = slot_of(pipes.go[0]);
  c.go_write_fd = slot_of(pipes.go[1]);
  c.stdout_fd = slot_of(c.stdout_fd);
  c.stderr_fd = slot_of(c.stderr_fd);
  for (int fd : cgroup_fds)
    slotted_cgroup_fds.push_back(slot_of(fd));
  c.cgroup_fds = &slotted_cgroup_fds;
  c.shared_table_end = slots.end;
  return placed;
}

// After `go`: OK once the child is past execve (the end of the report pipe, its copy
// closed at exec), else the step it failed, as it reported it.
absl::Status AwaitExec(int report, const std::string& path) {
  char msg[256];
  ssize_t n;
  do {
    n = read(report, msg, sizeof msg - 1);
  } while (n < 0 && errno == EINTR);
  if (n == 0)
    return absl::OkStatus();
  if (n < 0)
    return absl::InternalError("failed to start the task: " + Errno(errno));
  return absl::FailedPreconditionError("failed to start \"" + path +
                                       "\": " + std::string(msg, static_cast<size_t>(n)));
}

// An isolated task is pid 1 of a new pid namespace, with its own mount, ipc and uts
// (and with network mode none, network) namespaces. With `parent_reaps` it is our
// parent's child (CLONE_PARENT): the reaper's.
unsigned long CloneFlags(const SpawnSpec& spec, bool parent_reaps, bool shared_table) {
  unsigned long flags =
      SIGCHLD | (parent_reaps ? CLONE_PARENT : 0) | (shared_table ? CLONE_FILES : 0);
  if (spec.isolation.enabled) {
    flags |= CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
             (spec.isolation.network_none ? CLONE_NEWNET : 0);
  }
  return flags;
}

// The child's identity, read while it waits for `go` (so its start time names this
// process, not a later one with the same pid), recorded by `before_run`, and then `go`
// sent. Its identity once it may run; otherwise why not (it then exits unrun).
absl::StatusOr<SpawnedProcess> RecordAndRelease(
    int pid, int go_write, const std::function<absl::Status(const SpawnedProcess&)>& before_run) {
  SpawnedProcess p;
  p.pid = pid;
  const ProcessStat stat = ReadProcessStat(pid);
  p.start_ticks = stat.start_ticks;
  p.parent = stat.parent;
  if (absl::Status recorded = before_run ? before_run(p) : absl::OkStatus(); !recorded.ok())
    return recorded;
  ssize_t sent;
  do {
    sent = write(go_write, "g", 1);
  } while (sent < 0 && errno == EINTR);
  if (sent != 1)
    return absl::InternalError("failed to start the task: " + Errno(errno));
  return p;
}

}  // namespace

absl::StatusOr<SpawnedProcess> SpawnProcess(
    const SpawnSpec& spec, int stdout_fd, int stderr_fd, const std::vector<int>& cgroup_fds,
    bool parent_reaps, const std::function<absl::Status(const SpawnedProcess&)>& before_run) {
  // The child reads `c` (on our memory, when it shares it) until it is past execve: every
  // return below comes after that, or after the child is gone.
  ChildPlan c;
  c.stdout_fd = stdout_fd;
  c.stderr_fd = stderr_fd;
  c.cgroup_fds = &cgroup_fds;
  if (absl::Status s = PlanChild(spec, c); !s.ok())
    return s;
  const bool isolate = spec.isolation.enabled;
  SpawnPipes pipes;
  if (pipe2(pipes.report, O_CLOEXEC) != 0 || pipe2(pipes.go, O_CLOEXEC) != 0) {
    const int e = errno;
    pipes.Close();
    return absl::InternalError("failed to create a pipe: " + Errno(e));
  }
  c.report = pipes.report[1];
  c.go_fd = pipes.go[0];
  c.go_write_fd = pipes.go[1];
  c.go_write_original = pipes.go[1];
  const SpawnSlots& slots = Slots();
  std::vector<int> slotted_cgroup_fds;
  size_t in_slots = MoveIntoSlots(slots, pipes, cgroup_fds, slotted_cgroup_fds, c);
  const bool shared_table = c.shared_table_end > 0;
  const unsigned long clone_flags = CloneFlags(spec, parent_reaps, shared_table);
  // A child that shares our memory (see ChildStack) costs no copy of our page tables;
  // it waits for `go` all the same.
  std::optional<ChildStack> stack;
  if (shared_table && MayShareMemory(c)) {
    stack = ChildStack::Take();
    if (!stack->ok())
      stack.reset();  // no memory for it: forked
  }
  int pidfd = -1;
  const pid_t pid =
      stack ? CloneSharingMemory(c, clone_flags, *stack, &pidfd) : CloneOrFork(clone_flags, &pidfd);
  if (pid < 0) {
    const int e = errno;
    if (stack)
      stack->Release();
    ReleaseSlots(slots, in_slots);
    pipes.Close();
    return absl::InternalError(std::string(isolate ? "clone" : "fork") + ": " + Errno(e));
  }
  if (pid == 0)
    RunChild(c);
  // The child, gone: killed if it may still be running (it must never run its task from
  // here), then its stack released and our own child collected. (The reaper's child
  // is collected by the reaper: journaled, and matched to no task.)
  auto forget_child = [&] {
    if (stack)
      stack->ReleaseOnceGone(pidfd);
    CloseIfOpen(pidfd);
    if (!parent_reaps)
      waitpid(pid, nullptr, 0);
  };
  if (shared_table) {
    // Not a descriptor closed until the child has its own table (one opened is
    // harmless: the child closes all it does not need before exec). Our own write end
    // of the report pipe is the child's too until then, so a child that dies before it
    // says "r" is seen through its pidfd, not as the end of the pipe.
    const absl::Status own = AwaitOwnTable(pipes.report[0], pidfd);
    ReleaseSlots(slots, in_slots);
    if (!own.ok()) {
      pipes.Close();
      forget_child();
      return own;
    }
  }
  CloseIfOpen(pipes.report[1]);
  CloseIfOpen(pipes.go[0]);
  const absl::StatusOr<SpawnedProcess> p = RecordAndRelease(pid, pipes.go[1], before_run);
  CloseIfOpen(pipes.go[1]);  // without a byte: the child exits at once
  if (!p.ok()) {
    pipes.Close();
    forget_child();
    return p.status();
  }
  const absl::Status exec = AwaitExec(pipes.report[0], c.path);
  pipes.Close();
  if (!exec.ok()) {
    forget_child();
    return exec;
  }
  if (stack)
    stack->Release();
  CloseIfOpen(pidfd);
  return *p;
}

}  // namespace drover::supervisor
