// drover-reaper: the parent of every task on the node, and nothing else
// (docs/supervisor.md). It starts the supervisor as its child and is the subreaper of
// everything the supervisor starts: tasks are cloned with CLONE_PARENT, so they are this
// process's children from their first instruction, and anything they orphan comes here
// too. For each child that exits it writes the exit to the journal, and only
// then collects it (supervisor/exit_journal.h): the supervisor may crash, restart and
// read the exits it missed.
//
// Small on purpose: no event loop, no protocol, no threads, no configuration. One per
// node: it writes its pid next to the journal (reaper.pid), and an agent that finds it
// alive asks it for a supervisor (SIGUSR1) rather than start another.
//
// - A supervisor that dies (a signal, a non-zero code) is started again: at once if it
//   had run for a minute, else after 1 s, doubling to 30 s. One that exits with 0 meant
//   to (asked to shut down, or SIGTERM): it is started again on SIGUSR1.
// - SIGTERM, SIGINT and SIGHUP are passed to the supervisor, and cancel a pending
//   restart.
// - It exits once it has no supervisor and no other child; until then it reaps.
//
//   drover-reaper -journal PATH -- SUPERVISOR [ARGS...]
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "supervisor/exit_record.h"

namespace {

using drover::supervisor::JournalExit;

void Log(const std::string& msg) {
  const std::string line = "drover-reaper: " + msg + "\n";
  (void)!write(2, line.data(), line.size());
}

// The whole of a (small, /proc) file; empty if it cannot be read. Plain system calls,
// not iostreams: they would link a large part of libstdc++ into this static binary.
std::string ReadFile(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    break;
  }
  close(fd);
  return out;
}

// What the kernel keeps of a zombie in /proc/<pid>/stat: its start time and CPU times.
// Fields left 0 when it cannot be read.
void ReadStat(int pid, JournalExit& e) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos || close + 2 > stat.size())
    return;
  const char* p = stat.c_str() + close + 2;
  // Fields from 3 (state) on: utime is 14, stime 15, starttime 22.
  for (int field = 3; field <= 22 && *p != '\0'; ++field) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(p, &end, 10);
    if (field == 14)
      e.user_ticks = v;
    else if (field == 15)
      e.system_ticks = v;
    else if (field == 22)
      e.start_ticks = v;
    p = std::strchr(p, ' ');
    if (p == nullptr)
      return;
    ++p;
  }
}

int64_t NowNanos() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Children that have exited and not been collected, peeked at (WNOWAIT): they stay
// zombies, their status kept by the kernel, until the journal holds it.
std::vector<siginfo_t> ExitedChildren() {
  std::vector<siginfo_t> out;
  siginfo_t first{};
  if (waitid(P_ALL, 0, &first, WEXITED | WNOHANG | WNOWAIT) != 0 || first.si_pid == 0)
    return out;  // none (the usual case on a tick): one system call
  // Every exited child at once where the kernel lists children (one journal write for
  // a burst of exits); else the one found.
  const std::string list = ReadFile("/proc/self/task/" + std::to_string(getpid()) + "/children");
  const char* p = list.c_str();
  for (;;) {
    char* end = nullptr;
    const long pid = std::strtol(p, &end, 10);
    if (end == p)
      break;
    p = end;
    siginfo_t info{};
    if (pid > 0 && waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid != 0)
      out.push_back(info);
  }
  if (out.empty())
    out.push_back(first);
  return out;
}

bool HasChildren() {
  siginfo_t info{};
  return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0 || errno != ECHILD;
}

pid_t StartSupervisor(const std::vector<std::string>& args, const sigset_t& normal) {
  std::vector<char*> argv;
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &normal, nullptr);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0)
    Log(std::string("fork: ") + std::strerror(errno));
  else
    Log("started supervisor " + std::to_string(pid));
  return pid;
}

// Writes our pid to `path` (aside, then renamed over).
void WritePidFile(const std::string& path) {
  const std::string tmp = path + ".tmp";
  const std::string pid = std::to_string(getpid()) + "\n";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0 && write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
  if (fd >= 0)
    ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0)
    Log("cannot write " + path + ": " + std::strerror(errno));
}

int64_t MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

// The reaper's state between wake-ups: its supervisor and when to start another.
struct Reaper {
  std::string journal;
  std::vector<std::string> supervisor_args;
  sigset_t normal;  // the signal mask children get
  pid_t supervisor = 0;
  int64_t started_at = 0;
  bool restart = false;    // a supervisor is wanted and none runs
  int64_t restart_at = 0;  // not before (monotonic seconds)
  int64_t backoff = 0;     // seconds before the next restart after a failure
  bool stopping = false;   // a stop signal was passed on; cleared by SIGUSR1

  void Start() {
    restart = false;
    supervisor = StartSupervisor(supervisor_args, normal);
    started_at = MonotonicSeconds();
    if (supervisor < 0) {
      restart = true;
      restart_at = started_at + 1;
    }
  }

  void SupervisorExited() {
    int status = 0;
    waitpid(supervisor, &status, WNOHANG);
    Log("supervisor " + std::to_string(supervisor) + " exited (" +
        (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                             : "code " + std::to_string(WEXITSTATUS(status))) +
        ")");
    supervisor = 0;
    // It meant to (code 0), or it was told to stop (whatever it died of): started
    // again when an agent asks.
    if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || stopping)
      return;
    const int64_t now = MonotonicSeconds();
    if (now - started_at >= 60)
      backoff = 0;
    else
      backoff = backoff == 0 ? 1 : std::min<int64_t>(backoff * 2, 30);
    restart = true;
    restart_at = now + backoff;
  }

  // Journals every task that exited, then collects them; the supervisor is collected
  // at once. A journal that cannot be written leaves the tasks to the next try.
  // Whether it collected anything (then there may be more: call again).
  bool Collect() {
    std::vector<JournalExit> exits;
    bool collected_supervisor = false;
    for (const siginfo_t& child : ExitedChildren()) {
      if (child.si_pid == supervisor) {
        SupervisorExited();
        collected_supervisor = true;
        continue;
      }
      JournalExit e;
      e.pid = child.si_pid;
      e.boot = drover::supervisor::CurrentBoot();
      e.time_ns = NowNanos();
      if (child.si_code == CLD_EXITED)
        e.exit_code = child.si_status;
      else
        e.signal = child.si_status;
      ReadStat(child.si_pid, e);
      exits.push_back(e);
    }
    if (std::string error; !drover::supervisor::AppendExitRecords(journal, exits, &error)) {
      // The statuses stay with the kernel (zombies) until the journal takes them.
      Log("cannot journal " + std::to_string(exits.size()) + " exit(s), retrying: " + error);
      return false;
    }
    for (const JournalExit& e : exits)
      waitpid(e.pid, nullptr, WNOHANG);
    return !exits.empty() || collected_supervisor;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string journal;
  std::vector<std::string> supervisor;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "-journal" || arg == "--journal") && i + 1 < argc) {
      journal = argv[++i];
    } else if (arg == "--") {
      supervisor.assign(argv + i + 1, argv + argc);
      break;
    } else {
      break;
    }
  }
  if (journal.empty() || supervisor.empty()) {
    std::fprintf(stderr, "usage: drover-reaper -journal PATH -- SUPERVISOR [ARGS...]\n");
    return 2;
  }
  // Without this the guarantee does not hold: refuse to run rather than pretend.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Log(std::string("PR_SET_CHILD_SUBREAPER: ") + std::strerror(errno));
    return 1;
  }
  // The last process on the node the kernel should pick when memory runs out. The
  // supervisor sets its own; tasks set theirs back to 0.
  if (const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); fd >= 0) {
    if (write(fd, "-1000", 5) != 5)
      Log(std::string("oom_score_adj: ") + std::strerror(errno));
    close(fd);
  }
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1})
    sigaddset(&handled, sig);
  sigset_t normal;
  sigprocmask(SIG_BLOCK, &handled, &normal);
  signal(SIGPIPE, SIG_IGN);
  const size_t slash = journal.rfind('/');
  WritePidFile((slash == std::string::npos ? std::string(".") : journal.substr(0, slash)) +
               "/reaper.pid");

  Reaper r{.journal = journal, .supervisor_args = supervisor, .normal = normal};
  r.Start();
  if (r.supervisor < 0)
    return 1;
  const timespec tick{.tv_sec = 1, .tv_nsec = 0};
  for (;;) {
    siginfo_t sig{};
    const int got = sigtimedwait(&handled, &sig, &tick);
    if (got == SIGTERM || got == SIGINT || got == SIGHUP) {
      if (r.supervisor > 0)
        kill(r.supervisor, got);
      r.restart = false;  // stopping, not crashing: no new supervisor until asked
      r.stopping = true;
    }
    if (got == SIGUSR1)
      r.stopping = false;
    // Whatever woke us (or the tick, in case a SIGCHLD was coalesced away): collect
    // until no exited child is left.
    while (r.Collect()) {
    }
    if (got == SIGUSR1 && r.supervisor <= 0) {  // an agent wants a supervisor now
      r.restart = true;
      r.restart_at = 0;
    }
    if (r.restart && r.supervisor <= 0 && MonotonicSeconds() >= r.restart_at)
      r.Start();
    if (r.supervisor <= 0 && !r.restart && !HasChildren())
      return 0;
  }
}
