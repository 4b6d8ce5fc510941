#include "testing/etcd_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fixture_servers.h"

namespace drover::testing {

namespace {

// Two ports the kernel calls free now (held together so they differ). etcd binds them
// a moment later; Start retries if another process took one meanwhile.
std::vector<int> FreePorts(int n) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ports.push_back(0);
    } else {
      ports.push_back(ntohs(addr.sin_port));
    }
    fds.push_back(fd);
  }
  for (int fd : fds) {
    if (fd >= 0)
      close(fd);
  }
  return ports;
}

std::string EtcdBinary() {
  for (const char* p : {"/usr/bin/etcd", "/usr/local/bin/etcd"}) {
    if (access(p, X_OK) == 0)
      return p;
  }
  return "";
}

}  // namespace

EtcdProcess::EtcdProcess() {
  for (int attempt = 0; attempt < 3 && !ok(); ++attempt) {
    if (Start())
      return;
  }
  ADD_FAILURE() << "etcd did not start (scripts/install-deps.sh installs etcd-server):\n" << Log();
}

EtcdProcess::~EtcdProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    ForgetFixtureServer(pid_);
  }
}

bool EtcdProcess::Start() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    ForgetFixtureServer(pid_);
    pid_ = -1;
  }
  const std::string binary = EtcdBinary();
  if (binary.empty()) {
    std::ofstream(dir_.path() / "etcd.log") << "no etcd binary in /usr/bin or /usr/local/bin\n";
    return false;
  }
  const std::vector<int> ports = FreePorts(2);
  if (ports[0] == 0 || ports[1] == 0)
    return false;
  const std::string client = "http://127.0.0.1:" + std::to_string(ports[0]);
  const std::string peer = "http://127.0.0.1:" + std::to_string(ports[1]);
  std::vector<std::string> args = {binary,
                                   "--name",
                                   "test",
                                   "--data-dir",
                                   (dir_.path() / "data").string(),
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   "test=" + peer,
                                   "--log-outputs",
                                   "stderr"};
  const std::string log = (dir_.path() / "etcd.log").string();
  std::ofstream(log, std::ios::trunc);  // a retry's log starts afresh
  pid_ = SpawnServer(std::move(args), log, SIGKILL);
  if (pid_ < 0)
    return false;
  bool exited = false;
  const bool ready = WaitServerReady(
      pid_, [&] { return Log().find("ready to serve client requests") != std::string::npos; },
      std::chrono::seconds(30), &exited);
  if (exited)
    pid_ = -1;
  if (!ready || exited)
    return false;
  endpoint_ = "127.0.0.1:" + std::to_string(ports[0]);
  return true;
}

void EtcdProcess::Pause() {
  if (pid_ > 0)
    kill(pid_, SIGSTOP);
}

void EtcdProcess::Resume() {
  if (pid_ > 0)
    kill(pid_, SIGCONT);
}

std::string EtcdProcess::Log() const {
  return ReadFile(dir_.path() / "etcd.log");
}

}  // namespace drover::testing
