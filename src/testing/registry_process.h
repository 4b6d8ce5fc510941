// A real Docker registry for tests (Debian's docker-registry, which
// scripts/install-deps.sh installs): on a free 127.0.0.1 port (which a Docker daemon
// takes as insecure, so no TLS), its storage under a temp dir, with htpasswd auth for
// one user (made with htpasswd(1), apache2-utils). Killed on destruction. When it cannot
// start, the test fails saying why.
#pragma once

#include <sys/types.h>

#include <string>

#include "testing/test_util.h"

namespace drover::testing {

// A port of 127.0.0.1 free when asked (bound and released), for a server to take.
int FreeLoopbackPort();

class RegistryProcess {
 public:
  RegistryProcess(std::string user, std::string password);
  ~RegistryProcess();
  RegistryProcess(const RegistryProcess&) = delete;
  RegistryProcess& operator=(const RegistryProcess&) = delete;

  bool ok() const { return pid_ > 0; }
  // "127.0.0.1:<port>", an image reference's host part.
  const std::string& address() const { return address_; }
  std::string Log() const;

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  std::string address_;
};

}  // namespace drover::testing
