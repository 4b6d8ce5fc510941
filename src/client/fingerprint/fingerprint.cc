#include "client/fingerprint/fingerprint.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/ids.h"

namespace drover::fingerprint {
namespace fs = std::filesystem;
namespace {

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\n\""));
  s.erase(s.find_last_not_of(" \t\n\"") + 1);
  return s;
}

std::map<std::string, std::string> ReadKeyValues(const fs::path& p, char sep) {
  std::map<std::string, std::string> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(sep);
    if (at == std::string::npos)
      continue;
    out.emplace(Trim(line.substr(0, at)), Trim(line.substr(at + 1)));
  }
  return out;
}

int64_t CpuMhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) == 0) {
      const size_t at = line.find(':');
      if (at != std::string::npos) {
        try {
          return static_cast<int64_t>(std::llround(std::stod(line.substr(at + 1))));
        } catch (const std::exception&) {
          break;
        }
      }
    }
  }
  return 1000;  // virtual machines without a frequency: count 1 GHz per core
}

std::string FirstIpv4() {
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0)
    return "127.0.0.1";
  std::string found;
  for (ifaddrs* a = addrs; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET)
      continue;
    if ((a->ifa_flags & IFF_LOOPBACK) != 0 || (a->ifa_flags & IFF_UP) == 0)
      continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
    found = buf;
    break;
  }
  freeifaddrs(addrs);
  return found.empty() ? "127.0.0.1" : found;
}

}  // namespace

absl::StatusOr<std::string> LoadOrCreateId(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError("failed to create '" + dir.string() + "': " + ec.message());
  }
  const fs::path p = dir / name;
  {
    std::ifstream in(p);
    std::string id;
    if (in >> id && common::IsUuid(id))
      return id;
  }
  const std::string id = common::NewUuid();
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << id;
    if (!out)
      return absl::InternalError("failed to write '" + tmp.string() + "'");
  }
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write, ec);
  fs::rename(tmp, p, ec);
  if (ec) {
    return absl::InternalError("failed to persist node identity '" + p.string() +
                               "': " + ec.message());
  }
  return id;
}

absl::StatusOr<model::Node> FingerprintNode(
    const FingerprintConfig& config, const std::map<std::string, drivers::Driver*>& drivers) {
  model::Node n;
  const fs::path client_dir = config.data_dir / "client";
  auto id = LoadOrCreateId(client_dir, "client-id");
  if (!id.ok())
    return id.status();
  auto secret = LoadOrCreateId(client_dir, "secret-id");
  if (!secret.ok())
    return secret.status();
  n.id = *id;
  n.secret_id = *secret;
  n.datacenter = config.datacenter;
  n.node_class = config.node_class;
  n.http_addr = config.http_addr;
  n.meta = config.meta;

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  n.name = config.node_name.empty() ? std::string(host) : config.node_name;

  utsname u{};
  uname(&u);
  n.attributes["kernel.name"] = "linux";
  n.attributes["kernel.version"] = u.release;
  n.attributes["kernel.arch"] = u.machine;
  n.attributes["cpu.arch"] = std::string(u.machine) == "x86_64" ? "amd64" : u.machine;
  n.attributes["unique.hostname"] = host;
  n.attributes["os.name"] = "linux";
  auto os = ReadKeyValues("/etc/os-release", '=');
  if (auto it = os.find("ID"); it != os.end())
    n.attributes["os.name"] = it->second;
  if (auto it = os.find("VERSION_ID"); it != os.end())
    n.attributes["os.version"] = it->second;
  n.attributes["nomad.version"] = "1.9.5";
  n.attributes["drover.version"] = "0.1.0";

  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int64_t mhz = CpuMhz();
  n.node_resources.total_cores = cores;
  n.node_resources.cpu_shares = cores * mhz;
  n.attributes["cpu.numcores"] = std::to_string(cores);
  n.attributes["cpu.frequency"] = std::to_string(mhz);
  n.attributes["cpu.totalcompute"] = std::to_string(cores * mhz);

  auto mem = ReadKeyValues("/proc/meminfo", ':');
  if (auto it = mem.find("MemTotal"); it != mem.end()) {
    const int64_t kb = std::stoll(it->second);
    n.node_resources.memory_mb = kb / 1024;
    n.attributes["memory.totalbytes"] = std::to_string(kb * 1024);
  }
  struct statvfs vfs {};
  if (statvfs(config.data_dir.c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    n.node_resources.disk_mb = static_cast<int64_t>(free_bytes / (1024 * 1024));
    n.attributes["unique.storage.volume"] = config.data_dir.string();
    n.attributes["unique.storage.bytesfree"] = std::to_string(free_bytes);
  }
  model::NetworkResource net;
  net.mode = "host";
  if (config.dev_mode) {
    net.device = "lo";
    net.ip = "127.0.0.1";
  } else {
    net.ip = FirstIpv4();
  }
  net.cidr = net.ip + "/32";
  n.node_resources.networks.push_back(net);
  n.attributes["unique.network.ip-address"] = net.ip;

  ApplyDriverFingerprints(n, drivers);
  return n;
}

bool ApplyDriverFingerprints(model::Node& n,
                             const std::map<std::string, drivers::Driver*>& drivers) {
  const auto now = std::chrono::time_point_cast<common::Duration>(std::chrono::system_clock::now());
  bool changed = false;
  for (const auto& [name, driver] : drivers) {
    const drivers::DriverFingerprint fp = driver->Fingerprint();
    model::DriverInfo info;
    info.detected = fp.detected;
    info.healthy = fp.healthy;
    info.health_description = fp.health_description;
    info.attributes = fp.attributes;
    auto it = n.drivers.find(name);
    if (it != n.drivers.end()) {
      info.update_time = it->second.update_time;
      if (it->second == info)
        continue;  // unchanged: keep its update time
    }
    info.update_time = now;
    n.drivers[name] = info;
    changed = true;
    if (fp.detected) {
      for (const auto& [k, v] : fp.attributes)
        n.attributes[k] = v;
      n.attributes["driver." + name] = "1";
    } else {
      n.attributes.erase("driver." + name);
    }
  }
  return changed;
}

std::vector<model::NodeEvent> DriverHealthEvents(
    const std::map<std::string, model::DriverInfo>& before,
    const std::map<std::string, model::DriverInfo>& after, common::Time now) {
  std::vector<model::NodeEvent> out;
  for (const auto& [name, info] : after) {
    auto was = before.find(name);
    if (was == before.end() ||
        (was->second.detected == info.detected && was->second.healthy == info.healthy))
      continue;
    std::string message = info.health_description;
    if (message.empty()) {
      message = "Driver " + name + " is " +
                (!info.detected ? "not detected"
                 : info.healthy ? "healthy"
                                : "unhealthy");
    }
    // Plain ASCII, cut to the servers' bound: a byte that JSON would replace (or a
    // character cut in half) could make the message longer than the bound on arrival.
    for (char& c : message) {
      if (static_cast<unsigned char>(c) >= 0x80)
        c = '?';
    }
    message.resize(std::min(message.size(), model::kMaxNodeEventMessageBytes));
    out.push_back(model::NodeEvent{.message = std::move(message),
                                   .subsystem = model::kNodeEventDriver,
                                   .details = {{"driver", name}},
                                   .timestamp = now});
  }
  return out;
}

}  // namespace drover::fingerprint
