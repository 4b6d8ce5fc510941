// libdrover_fault_inject.so: an LD_PRELOAD shim that makes the write path of one file
// fail, for the state DB's fault tests (crash_consistency_test.cc). It sits between
// LMDB and the C library, so what it breaks is exactly what a failing disk breaks: the
// calls LMDB makes to write and sync the DB file.
//
// Environment (all read once, at the first intercepted call):
//   DROVER_FAULT_CALL    pwrite | write | writev | fdatasync | fsync | msync
//   DROVER_FAULT_MODE    eio | enospc | short (short: a write writes half and says so;
//                        for a sync, short is eio)
//   DROVER_FAULT_AFTER   the Nth call of that kind on the file fails (1-based)
//   DROVER_FAULT_TIMES   how many calls in a row fail from there (default 1)
//   DROVER_FAULT_FILE    which file: calls on a descriptor whose path ends with this
//                        (default "state.db"); msync has no descriptor and counts all
//   DROVER_FAULT_REPORT  a file that gets, at exit, one line per call kind:
//                        "<call> <calls on the file> <faults injected>"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

namespace {

enum Call { kPwrite, kWrite, kWritev, kFdatasync, kFsync, kMsync, kCalls };
constexpr const char* kNames[kCalls] = {"pwrite", "write", "writev", "fdatasync", "fsync", "msync"};

struct Config {
  int call = -1;
  int mode = EIO;  // or ENOSPC; 0: short
  long after = 0;
  long times = 1;
  const char* file = "state.db";
  const char* report = nullptr;
};

Config g_config;
std::atomic<bool> g_loaded{false};
std::atomic<long> g_count[kCalls];
std::atomic<long> g_injected[kCalls];

void Load() {
  if (g_loaded.load(std::memory_order_acquire))
    return;
  Config c;
  if (const char* call = getenv("DROVER_FAULT_CALL")) {
    for (int i = 0; i < kCalls; ++i) {
      if (strcmp(call, kNames[i]) == 0)
        c.call = i;
    }
  }
  if (const char* mode = getenv("DROVER_FAULT_MODE")) {
    if (strcmp(mode, "enospc") == 0)
      c.mode = ENOSPC;
    else if (strcmp(mode, "short") == 0)
      c.mode = 0;
  }
  if (const char* after = getenv("DROVER_FAULT_AFTER"))
    c.after = atol(after);
  if (const char* times = getenv("DROVER_FAULT_TIMES"))
    c.times = atol(times);
  if (const char* file = getenv("DROVER_FAULT_FILE"))
    c.file = file;
  c.report = getenv("DROVER_FAULT_REPORT");
  g_config = c;
  g_loaded.store(true, std::memory_order_release);
}

bool OnTheFile(int fd) {
  char link[64];
  char path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return false;
  path[n] = '\0';
  const size_t want = strlen(g_config.file);
  return static_cast<size_t>(n) >= want && strcmp(path + n - want, g_config.file) == 0;
}

// Counts a call of `call` on the file; whether this one fails, and how (0: short).
bool Inject(Call call, int fd, int* mode) {
  Load();
  if (fd >= 0 && !OnTheFile(fd))
    return false;
  const long n = g_count[call].fetch_add(1) + 1;
  if (call != g_config.call || n < g_config.after || n >= g_config.after + g_config.times)
    return false;
  g_injected[call].fetch_add(1);
  *mode = g_config.mode;
  return true;
}

template <typename F>
F Real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

__attribute__((destructor)) void WriteReport() {
  Load();
  if (g_config.report == nullptr)
    return;
  const int fd = open(g_config.report, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  static auto real_write = Real<ssize_t (*)(int, const void*, size_t)>("write");
  for (int i = 0; i < kCalls; ++i) {
    char line[128];
    const int len = snprintf(line, sizeof line, "%s %ld %ld\n", kNames[i], g_count[i].load(),
                             g_injected[i].load());
    (void)!real_write(fd, line, static_cast<size_t>(len));
  }
  close(fd);
}

}  // namespace

extern "C" {

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static auto real = Real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  int mode = 0;
  if (Inject(kPwrite, fd, &mode)) {
    if (mode != 0 || count < 2) {
      errno = mode != 0 ? mode : EIO;
      return -1;
    }
    return real(fd, buf, count / 2, offset);
  }
  return real(fd, buf, count, offset);
}

ssize_t write(int fd, const void* buf, size_t count) {
  static auto real = Real<ssize_t (*)(int, const void*, size_t)>("write");
  int mode = 0;
  if (Inject(kWrite, fd, &mode)) {
    if (mode != 0 || count < 2) {
      errno = mode != 0 ? mode : EIO;
      return -1;
    }
    return real(fd, buf, count / 2);
  }
  return real(fd, buf, count);
}

ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  static auto real = Real<ssize_t (*)(int, const struct iovec*, int)>("writev");
  int mode = 0;
  if (Inject(kWritev, fd, &mode)) {
    if (mode != 0 || iovcnt < 1 || iov[0].iov_len < 2) {
      errno = mode != 0 ? mode : EIO;
      return -1;
    }
    struct iovec half = {iov[0].iov_base, iov[0].iov_len / 2};
    return real(fd, &half, 1);
  }
  return real(fd, iov, iovcnt);
}

int fdatasync(int fd) {
  static auto real = Real<int (*)(int)>("fdatasync");
  int mode = 0;
  if (Inject(kFdatasync, fd, &mode)) {
    errno = mode != 0 ? mode : EIO;
    return -1;
  }
  return real(fd);
}

int fsync(int fd) {
  static auto real = Real<int (*)(int)>("fsync");
  int mode = 0;
  if (Inject(kFsync, fd, &mode)) {
    errno = mode != 0 ? mode : EIO;
    return -1;
  }
  return real(fd);
}

int msync(void* addr, size_t length, int flags) {
  static auto real = Real<int (*)(void*, size_t, int)>("msync");
  int mode = 0;
  if (Inject(kMsync, -1, &mode)) {
    errno = mode != 0 ? mode : EIO;
    return -1;
  }
  return real(addr, length, flags);
}

}  // extern "C"
