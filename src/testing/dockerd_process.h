// A real Docker daemon for tests (Debian's docker.io, which scripts/install-deps.sh
// installs): dockerd with its own data root, exec root, pidfile, unix socket and
// containerd namespaces under a temp dir, so it neither sees nor touches another
// daemon's containers. Stopped (SIGTERM, then SIGKILL) on destruction. When it cannot
// start, the test fails saying why.
#pragma once

#include <sys/types.h>

#include <string>

#include "testing/test_util.h"

namespace drover::testing {

class DockerdProcess {
 public:
  DockerdProcess();
  ~DockerdProcess();
  DockerdProcess(const DockerdProcess&) = delete;
  DockerdProcess& operator=(const DockerdProcess&) = delete;

  bool ok() const { return pid_ > 0; }
  // "unix:///<dir>/docker.sock" (the driver's `endpoint` form).
  std::string endpoint() const { return "unix://" + socket_; }
  const std::string& socket_path() const { return socket_; }
  // Stops the daemon (its containers stop with it), and starts it again.
  void Stop();
  bool Start();
  std::string Log() const;

 private:
  TempDir dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace drover::testing
