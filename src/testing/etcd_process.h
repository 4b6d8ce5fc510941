// A real etcd for tests (Debian's etcd-server, which scripts/install-deps.sh installs):
// started on free loopback ports with its own temp data dir, killed and reaped on
// destruction. When it cannot start, the test fails saying why; it never skips.
#pragma once

#include <sys/types.h>

#include <string>

#include "testing/test_util.h"

namespace drover::testing {

class EtcdProcess {
 public:
  EtcdProcess();
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // Whether it runs and serves clients.
  bool ok() const { return pid_ > 0 && !endpoint_.empty(); }
  // "127.0.0.1:<port>", for etcd::Client.
  const std::string& endpoint() const { return endpoint_; }
  // SIGSTOP / SIGCONT: an etcd that stops answering, then comes back.
  void Pause();
  void Resume();
  // Its output so far, for failure messages.
  std::string Log() const;

 private:
  bool Start();

  TempDir dir_;
  pid_t pid_ = -1;
  std::string endpoint_;
};

}  // namespace drover::testing
