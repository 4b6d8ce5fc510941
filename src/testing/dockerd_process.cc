#include "testing/dockerd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fixture_servers.h"

namespace drover::testing {

namespace {

// One request on the daemon's socket (Connection: close); the whole answer, or "".
std::string Exchange(const std::string& socket_path, const std::string& method,
                     const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return "";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket_path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req =
        method + " " + path + " HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0 && answer.size() < (4 << 20))
        answer.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return answer;
}

// Whether the daemon answers GET /_ping on its socket.
bool Pings(const std::string& socket_path) {
  return Exchange(socket_path, "GET", "/_ping").find("\r\n\r\nOK") != std::string::npos;
}

// Force-removes every container of the daemon (a test may leave some behind).
void RemoveAllContainers(const std::string& socket_path) {
  const std::string list = Exchange(socket_path, "GET", "/containers/json?all=1");
  const std::string key = "\"Id\":\"";
  for (size_t at = list.find(key); at != std::string::npos; at = list.find(key, at + 1)) {
    const std::string id = list.substr(at + key.size(), 64);
    if (id.size() == 64 && id.find_first_not_of("0123456789abcdef") == std::string::npos)
      Exchange(socket_path, "DELETE", "/containers/" + id + "?force=1&v=1");
  }
}

}  // namespace

std::string DockerdCannotRun() {
  if (geteuid() != 0)
    return "dockerd needs root: the docker tests run as root (CI does)";
  return "";
}

DockerdProcess::DockerdProcess(Options options)
    : options_(options), socket_((dir_.path() / "docker.sock").string()) {
  if (!DockerdCannotRun().empty())
    return;  // the test skips
  if (options_.bridge && !CreateBridge()) {
    ADD_FAILURE() << "cannot create the test bridge " << bridge_ << " (iproute2, as root)";
    return;
  }
  if (!Start())
    ADD_FAILURE() << "dockerd did not start (scripts/install-deps.sh installs docker.io):\n"
                  << Log();
}

DockerdProcess::~DockerdProcess() {
  Stop();
  RemoveBridge();
}

namespace {

// Whether an interface of this host has an address in `prefix` (10.a.b.0/24).
bool PrefixInUse(const std::string& prefix) {
  const std::string cmd = "ip -o -4 addr show to " + prefix + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    return true;
  char buf[256];
  const bool any = fgets(buf, sizeof(buf), p) != nullptr;
  pclose(p);
  return any;
}

}  // namespace

bool DockerdProcess::CreateBridge() {
  // Per process and fixture: a name within IFNAMSIZ and a /24 of 10.200.0.0/13 that no
  // interface (another test's bridge) uses yet.
  static int fixtures = 0;
  ++fixtures;
  bridge_ = "drvbr" + std::to_string(getpid() % 100000) + "x" + std::to_string(fixtures % 10);
  const int first = (static_cast<int>(getpid()) * 8 + fixtures) % (8 * 256);
  for (int i = 0; i < 8 * 256; ++i) {
    const int n = (first + i) % (8 * 256);
    const std::string net = "10." + std::to_string(200 + n / 256) + "." + std::to_string(n % 256);
    if (PrefixInUse(net + ".0/24"))
      continue;
    const std::string cmd = "ip link add name " + bridge_ + " type bridge && ip addr add " + net +
                            ".1/24 dev " + bridge_ + " && ip link set " + bridge_ + " up";
    if (std::system(cmd.c_str()) != 0)
      break;
    return true;
  }
  RemoveBridge();
  return false;
}

void DockerdProcess::RemoveBridge() {
  if (bridge_.empty())
    return;
  const std::string cmd = "ip link del " + bridge_ + " 2>/dev/null";
  (void)std::system(cmd.c_str());
  bridge_.clear();
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
      // The host's firewall and docker0 are left alone: published ports go through
      // docker-proxy on the fixture's own bridge.
      "--iptables=false", "--ip-masq=false", "--bridge=" + (bridge_.empty() ? "none" : bridge_)};
  if (options_.live_restore)
    args.push_back("--live-restore");
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
      ForgetFixtureServer(pid_);
    }
    pid_ = -1;
    return false;
  }
  return true;
}

void DockerdProcess::Stop() {
  if (pid_ <= 0)
    return;
  // Running containers would outlive a daemon with --live-restore.
  if (!options_.live_restore || !keep_containers_)
    RemoveAllContainers(socket_);
  // SIGTERM: the daemon stops its containers, unmounts and stops its containerd.
  kill(pid_, SIGTERM);
  const bool gone =
      WaitFor([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, std::chrono::seconds(30));
  if (!gone) {
    const std::string log = Log();
    std::cerr << "dockerd did not stop within 30 s of SIGTERM; killed. Its log ends:\n"
              << log.substr(log.size() > 3000 ? log.size() - 3000 : 0) << "\n";
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  ForgetFixtureServer(pid_);
  pid_ = -1;
}

std::string DockerdProcess::Log() const {
  return ReadFile(dir_.path() / "dockerd.log");
}

}  // namespace drover::testing
