// A real Docker daemon for tests (Debian's docker.io, which scripts/install-deps.sh
// installs): dockerd with its own data root, exec root, pidfile, unix socket and
// containerd namespaces under a temp dir, so it neither sees nor touches another
// daemon's containers. Stopped (SIGTERM, then SIGKILL) on destruction. When it cannot
// start, the test fails saying why; on a machine where it cannot run at all (not root),
// nothing is started and tests skip (DROVER_SKIP_WITHOUT_DOCKERD).
#pragma once

#include <sys/types.h>

#include <string>

#include "testing/test_util.h"

namespace drover::testing {

// Why dockerd cannot run on this machine at all ("" when it can): it needs root. A
// docker test skips with this reason (DROVER_SKIP_WITHOUT_DOCKERD); a daemon that
// could run but does not start fails its test.
std::string DockerdCannotRun();

#define DROVER_SKIP_WITHOUT_DOCKERD()                                          \
  do {                                                                         \
    if (std::string why = ::drover::testing::DockerdCannotRun(); !why.empty()) \
      GTEST_SKIP() << why;                                                     \
  } while (0)

class DockerdProcess {
 public:
  struct Options {
    // A bridge of its own (a /24 of 10.200.0.0/13 on a device the fixture creates and
    // removes) for containers in bridge mode and their ports published on 127.0.0.1.
    // Without it the daemon runs with --bridge=none.
    bool bridge = false;
    // --live-restore: containers keep running while the daemon is stopped.
    bool live_restore = false;
  };
  DockerdProcess() : DockerdProcess(Options{}) {}
  explicit DockerdProcess(Options options);
  ~DockerdProcess();
  DockerdProcess(const DockerdProcess&) = delete;
  DockerdProcess& operator=(const DockerdProcess&) = delete;

  bool ok() const { return pid_ > 0; }
  // "unix:///<dir>/docker.sock" (the driver's `endpoint` form).
  std::string endpoint() const { return "unix://" + socket_; }
  const std::string& socket_path() const { return socket_; }
  // Stops the daemon, removing its containers first, and starts it again. With
  // live_restore, StopKeepingContainers() stops it while they keep running.
  void Stop();
  void StopKeepingContainers() {
    keep_containers_ = true;
    Stop();
    keep_containers_ = false;
  }
  bool Start();
  std::string Log() const;

 private:
  bool CreateBridge();
  void RemoveBridge();

  Options options_;
  TempDir dir_;
  std::string socket_;
  std::string bridge_;
  bool keep_containers_ = false;
  pid_t pid_ = -1;
};

}  // namespace drover::testing
