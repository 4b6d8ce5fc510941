#include "testing/registry_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fixture_servers.h"

namespace drover::testing {

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

namespace {

// Whether something answers HTTP on `port` (the registry's /v2/ says 401 without auth).
bool Answers(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = false;
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /v2/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[64];
      ok = read(fd, buf, sizeof(buf)) > 0 && std::string_view(buf, 9) == "HTTP/1.1 ";
    }
  }
  if (fd >= 0)
    close(fd);
  return ok;
}

}  // namespace

RegistryProcess::RegistryProcess(std::string user, std::string password) {
  const std::string root = dir_.path().string();
  const std::string htpasswd = root + "/htpasswd";
  // bcrypt, as the registry requires.
  const std::string make = "htpasswd -Bbc " + htpasswd + " '" + user + "' '" + password + "' >" +
                           root + "/registry.log 2>&1";
  if (std::system(make.c_str()) != 0) {
    ADD_FAILURE() << "htpasswd (apache2-utils) failed:\n" << Log();
    return;
  }
  const int port = FreeLoopbackPort();
  std::ofstream(root + "/config.yml")
      << "version: 0.1\n"
      << "storage:\n  filesystem:\n    rootdirectory: " << root << "/data\n"
      << "http:\n  addr: 127.0.0.1:" << port << "\n"
      << "auth:\n  htpasswd:\n    realm: drover-test\n"
      << "    path: " << htpasswd << "\n";
  pid_ = SpawnServer({"/usr/bin/docker-registry", "serve", root + "/config.yml"},
                     root + "/registry.log", SIGKILL);
  bool exited = false;
  const bool ready =
      pid_ > 0 && WaitServerReady(
                      pid_, [&] { return Answers(port); }, std::chrono::seconds(30), &exited);
  if (!ready || exited) {
    if (pid_ > 0 && !exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      ForgetFixtureServer(pid_);
    }
    pid_ = -1;
    ADD_FAILURE() << "docker-registry did not start (scripts/install-deps.sh installs it):\n"
                  << Log();
    return;
  }
  address_ = "127.0.0.1:" + std::to_string(port);
}

RegistryProcess::~RegistryProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    ForgetFixtureServer(pid_);
  }
}

std::string RegistryProcess::Log() const {
  return ReadFile(dir_.path() / "registry.log");
}

}  // namespace drover::testing
