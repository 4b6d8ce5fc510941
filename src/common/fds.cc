#include "common/fds.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace drover::common {

namespace {

rlimit original_nofile{};
bool raised = false;

bool CloseRange(unsigned first, unsigned last) {
  return first > last || syscall(SYS_close_range, first, last, 0U) == 0;
}

}  // namespace

void CloseDescriptorsFrom(int low, int keep) {
  const unsigned lo = static_cast<unsigned>(low);
  const bool closed = keep >= low ? CloseRange(lo, static_cast<unsigned>(keep) - 1) &&
                                        CloseRange(static_cast<unsigned>(keep) + 1, ~0U)
                                  : CloseRange(lo, ~0U);
  if (closed)
    return;
  rlimit limit{};
  long max = 1 << 20;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < static_cast<rlim_t>(max)) {
    max = static_cast<long>(limit.rlim_cur);
  }
  for (long fd = low; fd < max; ++fd) {
    if (fd != keep)
      close(static_cast<int>(fd));
  }
}

long RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return 1024;
  if (!raised) {
    original_nofile = limit;
    raised = true;
  }
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
    getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur == RLIM_INFINITY ? (1L << 20) : static_cast<long>(limit.rlim_cur);
}

void RestoreDescriptorLimit() {
  if (raised)
    setrlimit(RLIMIT_NOFILE, &original_nofile);
}

void SetCloseOnExec(int fd) {
  const int flags = fcntl(fd, F_GETFD);
  if (flags >= 0)
    fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace drover::common
