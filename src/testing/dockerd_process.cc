#include "testing/dockerd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include <gtest/gtest.h>

namespace drover::testing {

namespace {

// Whether the daemon answers GET /_ping on its socket.
bool Pings(const std::string& socket_path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket_path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /_ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[512];
      const ssize_t n = read(fd, buf, sizeof(buf));
      ok =
          n > 0 && std::string(buf, static_cast<size_t>(n)).find("\r\n\r\nOK") != std::string::npos;
    }
  }
  close(fd);
  return ok;
}

}  // namespace

DockerdProcess::DockerdProcess() : socket_((dir_.path() / "docker.sock").string()) {
  if (!Start())
    ADD_FAILURE() << "dockerd did not start (scripts/install-deps.sh installs docker.io):\n"
                  << Log();
}

DockerdProcess::~DockerdProcess() {
  Stop();
}

bool DockerdProcess::Start() {
  if (pid_ > 0)
    return true;
  if (access("/usr/sbin/dockerd", X_OK) != 0) {
    std::ofstream(dir_.path() / "dockerd.log") << "no /usr/sbin/dockerd\n";
    return false;
  }
  const std::string root = dir_.path().string();
  const std::string ns = "drover-test-" + std::to_string(getpid());
  std::vector<std::string> args = {
      "/usr/sbin/dockerd", "--data-root", root + "/data", "--exec-root", root + "/exec",
      "--pidfile", root + "/dockerd.pid", "--host", "unix://" + socket_, "--containerd-namespace",
      ns, "--containerd-plugins-namespace", ns + "-plugins",
      // Not the host's /etc/docker/daemon.json.
      "--config-file", root + "/daemon.json",
      // The host's firewall and bridge are left alone (no container network yet).
      "--iptables=false", "--ip-masq=false", "--bridge=none"};
  std::ofstream(root + "/daemon.json") << "{}\n";
  // SIGTERM with the test process: the daemon stops its containers and its containerd.
  pid_ = SpawnServer(std::move(args), root + "/dockerd.log", SIGTERM);
  if (pid_ < 0)
    return false;
  bool exited = false;
  const bool ready = WaitServerReady(
      pid_, [&] { return Pings(socket_); }, std::chrono::seconds(60), &exited);
  if (exited || !ready) {
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    return false;
  }
  return true;
}

void DockerdProcess::Stop() {
  if (pid_ <= 0)
    return;
  // SIGTERM: the daemon stops its containers, unmounts and stops its containerd.
  kill(pid_, SIGTERM);
  const bool gone =
      WaitFor([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, std::chrono::seconds(30));
  if (!gone) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

std::string DockerdProcess::Log() const {
  return ReadFile(dir_.path() / "dockerd.log");
}

}  // namespace drover::testing
