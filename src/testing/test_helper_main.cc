// drover-test-helper: a scriptable task process for tests of process supervision.
// Runs its actions left to right:
//   exit N           exit with status N
//   write N          write N bytes ('x') to stdout
//   stderr N         write N bytes ('e') to stderr
//   ignore-term      ignore SIGTERM and SIGINT from now on
//   grandchild FILE  fork a child that writes its pid to FILE and pauses forever
//   ready FILE       create FILE (write our pid into it): "I am up"
//   pause            wait for a signal forever
//   wait-usr1        block until SIGUSR1 arrives, then go on with the next action
//   hog N            allocate and touch N MiB of memory, one MiB at a time
//   exchange A B     swap the paths A and B (renameat2 RENAME_EXCHANGE) forever: a
//                    task racing whoever resolves a path through A or B
// Without an exit action it exits 0 after the last one.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

volatile char g_sink = 0;

void WriteBytes(int fd, long n, char c) {
  char buf[4096];
  std::memset(buf, c, sizeof buf);
  while (n > 0) {
    const ssize_t chunk = n < static_cast<long>(sizeof buf) ? n : static_cast<long>(sizeof buf);
    const ssize_t w = write(fd, buf, static_cast<size_t>(chunk));
    if (w < 0)
      std::exit(3);
    n -= w;
  }
}

void WritePidFile(const char* path) {
  const std::string pid = std::to_string(getpid());
  // Written to a temp name and renamed, so a reader never sees a partial pid.
  const std::string tmp = std::string(path) + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, pid.data(), pid.size()) < 0 || close(fd) != 0 ||
      rename(tmp.c_str(), path) != 0) {
    std::exit(4);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string action = argv[i];
    const char* arg = i + 1 < argc ? argv[i + 1] : nullptr;
    if (action == "exit" && arg) {
      return std::atoi(argv[++i]);
    } else if (action == "write" && arg) {
      WriteBytes(1, std::atol(argv[++i]), 'x');
    } else if (action == "stderr" && arg) {
      WriteBytes(2, std::atol(argv[++i]), 'e');
    } else if (action == "ignore-term") {
      signal(SIGTERM, SIG_IGN);
      signal(SIGINT, SIG_IGN);
    } else if (action == "grandchild" && arg) {
      const char* file = argv[++i];
      const pid_t pid = fork();
      if (pid == 0) {
        WritePidFile(file);
        for (;;)
          pause();
      }
      if (pid < 0)
        return 5;
    } else if (action == "ready" && arg) {
      WritePidFile(argv[++i]);
    } else if (action == "wait-usr1") {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGUSR1);
      sigprocmask(SIG_BLOCK, &set, nullptr);
      int sig = 0;
      sigwait(&set, &sig);
    } else if (action == "hog" && arg) {
      const long mib = std::atol(argv[++i]);
      for (long m = 0; m < mib; ++m) {
        auto* block = static_cast<char*>(std::malloc(1 << 20));
        if (block == nullptr)
          return 6;
        std::memset(block, 1, 1 << 20);          // touched: charged to the cgroup
        g_sink = g_sink + block[m % (1 << 20)];  // used: not optimised away
      }
    } else if (action == "exchange" && i + 2 < argc) {
      const char* a = argv[++i];
      const char* b = argv[++i];
      for (;;) {
        if (renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0)
          return 7;
      }
    } else if (action == "pause") {
      for (;;)
        pause();
    } else {
      std::fprintf(stderr, "drover-test-helper: bad action '%s'\n", action.c_str());
      return 2;
    }
  }
  return 0;
}
