#include "drivers/docker/container_spec.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "common/beneath.h"
#include "common/mounts.h"

namespace drover::drivers::docker {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// What Docker grants every container unless dropped (moby's default set).
const std::vector<std::string>& DockerDefaultCaps() {
  static const std::vector<std::string> caps = {
      "audit_write",      "chown",   "dac_override", "fowner", "fsetid",  "kill",   "mknod",
      "net_bind_service", "net_raw", "setfcap",      "setgid", "setpcap", "setuid", "sys_chroot"};
  return caps;
}

std::string Upper(std::string s) {
  return absl::AsciiStrToUpper(s);
}

// "soft:hard" or one number for both.
absl::StatusOr<codec::Json> Ulimit(const std::string& name, const std::string& value) {
  const size_t colon = value.find(':');
  int64_t soft = 0, hard = 0;
  const std::string s = value.substr(0, colon);
  const std::string h = colon == std::string::npos ? s : value.substr(colon + 1);
  if (!absl::SimpleAtoi(s, &soft) || !absl::SimpleAtoi(h, &hard)) {
    return absl::InvalidArgumentError("ulimit " + name + " = \"" + value +
                                      "\" is not \"soft:hard\" numbers");
  }
  return codec::Json{{"Name", name}, {"Soft", soft}, {"Hard", hard}};
}

// A relative bind source, as Nomad takes it: from the task dir, and within the alloc
// dir ("local/data", "../alloc/data"). The path beneath the alloc dir, or "" when it
// leaves it.
std::string BeneathAllocDir(const std::string& source, const TaskConfig& task) {
  const std::filesystem::path full =
      (std::filesystem::path(task.task_dir) / source).lexically_normal();
  const std::filesystem::path rel = full.lexically_relative(task.alloc_dir);
  if (rel.empty() || *rel.begin() == ".." || rel == ".")
    return "";
  return rel.string();
}

// A bind mount's source on the host: a relative one is under the alloc dir (see
// BeneathAllocDir); an absolute one needs volumes enabled.
absl::StatusOr<std::string> BindSource(const std::string& source, const TaskConfig& task,
                                       const PluginConfig& plugin,
                                       const std::map<std::string, std::string>& pinned) {
  if (auto it = pinned.find(source); it != pinned.end())
    return it->second;
  if (std::filesystem::path(source).is_absolute()) {
    if (!plugin.volumes_enabled)
      return absl::InvalidArgumentError("volumes are not enabled; cannot mount host paths: \"" +
                                        source + "\"");
    return source;
  }
  const std::string rel = BeneathAllocDir(source, task);
  if (rel.empty()) {
    return absl::InvalidArgumentError("mount source \"" + source +
                                      "\" escapes the allocation directory");
  }
  return (std::filesystem::path(task.alloc_dir) / rel).string();
}

}  // namespace

namespace {

// The relative bind sources of `config` (mount blocks and volumes), each opened beneath
// the alloc dir with no symlink on its path and handed to `use` with its path beneath
// the alloc dir.
absl::Status ForEachSourceBeneath(
    const TaskConfig& task, const codec::DockerTaskConfig& config,
    const std::function<absl::Status(const std::string&, const std::string&, int)>& use) {
  std::vector<std::string> sources;
  for (const codec::DockerMount& m : config.mounts) {
    if (m.type == "bind")
      sources.push_back(m.source);
  }
  for (const std::string& v : config.volumes)
    sources.push_back(v.substr(0, v.find(':')));
  absl::StatusOr<common::UniqueFd> root;
  for (const std::string& source : sources) {
    if (source.empty() || source.front() == '/')
      continue;  // host paths: allowed or refused by the plugin's volumes setting
    const std::string rel = BeneathAllocDir(source, task);
    if (rel.empty())
      return absl::PermissionDeniedError("mount source \"" + source +
                                         "\" escapes the allocation directory");
    if (!root.ok() || !root->valid()) {
      root = common::OpenDirectory(task.alloc_dir);
      if (!root.ok())
        return root.status();
    }
    absl::StatusOr<common::UniqueFd> fd =
        common::OpenBeneath(root->get(), rel, O_PATH | O_CLOEXEC, common::Links::kRefuse);
    if (!fd.ok()) {
      return absl::PermissionDeniedError("mount source \"" + source +
                                         "\" is not a path beneath the allocation directory: " +
                                         std::string(fd.status().message()));
    }
    if (absl::Status s = use(source, rel, fd->get()); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBindSourcesBeneath(const TaskConfig& task,
                                     const codec::DockerTaskConfig& config) {
  return ForEachSourceBeneath(
      task, config, [](const std::string&, const std::string&, int) { return absl::OkStatus(); });
}

absl::StatusOr<std::map<std::string, std::string>> PinBindSources(
    const TaskConfig& task, const codec::DockerTaskConfig& config, const std::string& pin_dir) {
  std::map<std::string, std::string> pinned;
  absl::Status s = ForEachSourceBeneath(
      task, config, [&](const std::string& source, const std::string&, int fd) -> absl::Status {
        if (pinned.contains(source))
          return absl::OkStatus();
        std::error_code ec;
        std::filesystem::create_directories(pin_dir, ec);
        if (ec)
          return absl::InternalError("cannot create " + pin_dir + ": " + ec.message());
        struct stat st {};
        if (fstat(fd, &st) != 0)
          return common::ErrnoStatus(errno, "mount source \"" + source + "\"");
        const std::string target = pin_dir + "/" + std::to_string(pinned.size());
        const int made = S_ISDIR(st.st_mode)
                             ? mkdir(target.c_str(), 0700)
                             : open(target.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (made < 0)
          return common::ErrnoStatus(errno, "cannot create " + target);
        if (!S_ISDIR(st.st_mode))
          close(made);
        // The very file or directory checked above, whatever its path holds later.
        const std::string source_fd = "/proc/self/fd/" + std::to_string(fd);
        if (mount(source_fd.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0)
          return common::ErrnoStatus(errno, "cannot pin mount source \"" + source + "\"");
        pinned[source] = target;
        return absl::OkStatus();
      });
  if (!s.ok()) {
    (void)UnpinBindSources(pin_dir);
    return s;
  }
  return pinned;
}

absl::Status UnpinBindSources(const std::string& pin_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(pin_dir, ec))
    return absl::OkStatus();
  if (absl::Status s = common::UnmountUnder(pin_dir); !s.ok()) {
    // Each entry is a bind of shared data: never walk into one still mounted. Left
    // for a later attempt (the alloc dir's own removal tries again).
    return absl::InternalError("cannot unmount pinned sources under " + pin_dir + ": " +
                               std::string(s.message()));
  }
  // Through descriptors, following no symlink and stopping at any mount point left.
  return common::RemoveTree(pin_dir);
}

namespace {

using codec::Json;

// The container's own part: image, command, environment, user, labels.
Json ContainerPart(const TaskConfig& task, const codec::DockerTaskConfig& config,
                   const PluginConfig& plugin) {
  Json spec = Json::object();
  spec["Image"] = config.image;
  std::vector<std::string> cmd;
  if (!config.command.empty())
    cmd.push_back(config.command);
  cmd.insert(cmd.end(), config.args.begin(), config.args.end());
  if (!cmd.empty())
    spec["Cmd"] = cmd;
  if (!config.entrypoint.empty())
    spec["Entrypoint"] = config.entrypoint;
  std::vector<std::string> env;
  for (const auto& [k, v] : task.env)
    env.push_back(k + "=" + v);
  spec["Env"] = env;
  if (!task.user.empty())
    spec["User"] = task.user;
  if (!config.work_dir.empty())
    spec["WorkingDir"] = config.work_dir;
  if (!config.hostname.empty())
    spec["Hostname"] = config.hostname;
  Json labels = Json::object();
  for (const auto& [k, v] : config.labels)
    labels[k] = v;
  labels[kLabelAllocId] = task.alloc_id;
  labels[kLabelTaskName] = task.name;
  labels[kLabelJobName] = task.job_name;
  labels[kLabelTaskId] = task.id;
  labels[kLabelNodeId] = task.node_id;
  const std::map<std::string, std::string> extra = {
      {"job_name", task.job_name},          {"job_id", task.job_id},
      {"task_group_name", task.task_group}, {"task_name", task.name},
      {"namespace", task.namespace_},       {"node_id", task.node_id},
      {"node_name", task.node_name}};
  for (const auto& [name, value] : extra) {
    for (const std::string& pattern : plugin.extra_labels) {
      if (ExtraLabelMatches(pattern, name))
        labels["com.hashicorp.nomad." + name] = value;
    }
  }
  spec["Labels"] = std::move(labels);

  return spec;
}

// Binds (Nomad's directories, the hooks' mounts, `volumes`) and `mount` blocks.
absl::Status AddStorage(Json& host, const TaskConfig& task, const codec::DockerTaskConfig& config,
                        const PluginConfig& plugin,
                        const std::map<std::string, std::string>& pinned) {
  // Nomad's: the alloc dir, and the task's local/ and secrets/.
  std::vector<std::string> binds = {task.alloc_dir + "/alloc:/alloc",
                                    task.task_dir + "/local:/local",
                                    task.task_dir + "/secrets:/secrets"};
  for (const MountConfig& m : task.mounts)
    binds.push_back(m.host_path + ":" + m.task_path + (m.readonly ? ":ro" : ""));
  for (const std::string& v : config.volumes) {
    const size_t colon = v.find(':');
    if (colon == std::string::npos)
      return absl::InvalidArgumentError("volume \"" + v + "\" is not host:container[:ro]");
    absl::StatusOr<std::string> source = BindSource(v.substr(0, colon), task, plugin, pinned);
    if (!source.ok())
      return source.status();
    binds.push_back(*source + v.substr(colon));
  }
  host["Binds"] = binds;
  Json mounts = Json::array();
  for (const codec::DockerMount& m : config.mounts) {
    Json mount = {{"Type", m.type}, {"Target", m.target}, {"ReadOnly", m.readonly}};
    if (m.type == "bind") {
      absl::StatusOr<std::string> source = BindSource(m.source, task, plugin, pinned);
      if (!source.ok())
        return source.status();
      mount["Source"] = *source;
    } else if (m.type == "volume") {
      if (!plugin.volumes_enabled && !m.source.empty())
        return absl::InvalidArgumentError("volumes are not enabled; cannot mount volume \"" +
                                          m.source + "\"");
      mount["Source"] = m.source;
    }
    mounts.push_back(std::move(mount));
  }
  if (!mounts.empty())
    host["Mounts"] = std::move(mounts);

  return absl::OkStatus();
}

// Memory, CPU, pids and shm.
void AddResources(Json& host, const TaskConfig& task, const codec::DockerTaskConfig& config) {
  // Memory: the hard limit is memory_max where it is set, with memory as the soft one.
  if (task.memory_max_mb > task.memory_mb) {
    host["Memory"] = task.memory_max_mb * kMiB;
    host["MemoryReservation"] = task.memory_mb * kMiB;
  } else if (task.memory_mb > 0) {
    host["Memory"] = task.memory_mb * kMiB;
  }
  // No swap beyond the limit (Nomad's): Docker's default would double it.
  if (host.contains("Memory")) {
    host["MemorySwap"] = host["Memory"];
    host["MemorySwappiness"] = 0;
  }
  if (task.cpu_shares > 0)
    host["CpuShares"] = task.cpu_shares;
  if (config.pids_limit > 0)
    host["PidsLimit"] = config.pids_limit;
  if (config.shm_size > 0)
    host["ShmSize"] = config.shm_size;
}

// The network mode and the published ports.
absl::Status AddNetwork(Json& spec, Json& host, const TaskConfig& task,
                        const codec::DockerTaskConfig& config,
                        const std::vector<PortMapping>& ports) {
  std::string network = config.network_mode.empty() ? "bridge" : config.network_mode;
  if (task.network_mode == "none")
    network = "none";
  host["NetworkMode"] = network;
  if (!config.ports.empty()) {
    if (network != "bridge")
      return absl::InvalidArgumentError("ports are published in bridge network mode only");
    Json exposed = Json::object();
    Json bindings = Json::object();
    for (const std::string& label : config.ports) {
      auto it = std::find_if(ports.begin(), ports.end(),
                             [&](const PortMapping& p) { return p.label == label; });
      if (it == ports.end())
        return absl::InvalidArgumentError("port label \"" + label + "\" has no allocated port");
      // TCP and UDP, as Nomad publishes every port.
      const std::string port =
          std::to_string(it->container_port > 0 ? it->container_port : it->host_port);
      for (const char* proto : {"/tcp", "/udp"}) {
        exposed[port + proto] = Json::object();
        bindings[port + proto] =
            Json::array({{{"HostIp", it->host_ip}, {"HostPort", std::to_string(it->host_port)}}});
      }
    }
    spec["ExposedPorts"] = std::move(exposed);
    host["PortBindings"] = std::move(bindings);
  }

  return absl::OkStatus();
}

// Privileged mode and capabilities, as far as the plugin allows them.
absl::Status AddPrivileges(Json& host, const codec::DockerTaskConfig& config,
                           const PluginConfig& plugin) {
  if (config.privileged && !plugin.allow_privileged)
    return absl::PermissionDeniedError("Docker privileged mode is disabled on this Nomad agent");
  host["Privileged"] = config.privileged;
  std::vector<std::string> not_allowed;
  for (const std::string& cap : config.cap_add) {
    std::string name = absl::AsciiStrToLower(cap);
    if (name.starts_with("cap_"))
      name = name.substr(4);
    const bool allowed = std::find(plugin.allow_caps.begin(), plugin.allow_caps.end(), name) !=
                             plugin.allow_caps.end() ||
                         std::find(plugin.allow_caps.begin(), plugin.allow_caps.end(), "all") !=
                             plugin.allow_caps.end();
    if (!allowed)
      not_allowed.push_back(Upper(name));
  }
  if (!not_allowed.empty()) {
    return absl::PermissionDeniedError(
        "Docker driver doesn't have the following caps allowlisted on this Nomad agent: [" +
        absl::StrJoin(not_allowed, " ") + "]");
  }
  if (!config.cap_add.empty())
    host["CapAdd"] = config.cap_add;
  // Docker's defaults come down to what the plugin allows (net_raw is not in Nomad's
  // list), and the task may drop more.
  std::vector<std::string> drop;
  const bool all = std::find(plugin.allow_caps.begin(), plugin.allow_caps.end(), "all") !=
                   plugin.allow_caps.end();
  for (const std::string& cap : DockerDefaultCaps()) {
    if (!all && std::find(plugin.allow_caps.begin(), plugin.allow_caps.end(), cap) ==
                    plugin.allow_caps.end())
      drop.push_back(Upper(cap));
  }
  drop.insert(drop.end(), config.cap_drop.begin(), config.cap_drop.end());
  if (!drop.empty())
    host["CapDrop"] = drop;
  return absl::OkStatus();
}

// The rest of `config`, the hooks' devices, and Docker's own log.
absl::Status AddOptions(Json& host, const TaskConfig& task, const codec::DockerTaskConfig& config) {
  if (config.init)
    host["Init"] = true;
  if (config.readonly_rootfs)
    host["ReadonlyRootfs"] = true;
  if (!config.extra_hosts.empty())
    host["ExtraHosts"] = config.extra_hosts;
  if (!config.dns_servers.empty())
    host["Dns"] = config.dns_servers;
  if (!config.security_opt.empty())
    host["SecurityOpt"] = config.security_opt;
  if (!config.sysctl.empty())
    host["Sysctls"] = config.sysctl;
  if (!config.ulimit.empty()) {
    Json ulimits = Json::array();
    for (const auto& [name, value] : config.ulimit) {
      absl::StatusOr<Json> u = Ulimit(name, value);
      if (!u.ok())
        return u.status();
      ulimits.push_back(*std::move(u));
    }
    host["Ulimits"] = std::move(ulimits);
  }
  Json devices = Json::array();
  for (const DeviceConfig& d : task.devices) {
    devices.push_back({{"PathOnHost", d.host_path},
                       {"PathInContainer", d.task_path},
                       {"CgroupPermissions", d.permissions.empty() ? "rwm" : d.permissions}});
  }
  if (!devices.empty())
    host["Devices"] = std::move(devices);
  // Drover reads the output through the Engine API (json-file is what it keeps).
  host["LogConfig"] = {{"Type", "json-file"}, {"Config", {{"max-file", "2"}, {"max-size", "2m"}}}};
  return absl::OkStatus();
}

// GPUs the nvidia device plugin reserved (NVIDIA_VISIBLE_DEVICES from the device
// hook): with the NVIDIA runtime on the daemon, a DeviceRequest for exactly those.
void AddGpus(Json& host, const TaskConfig& task, bool nvidia_runtime) {
  auto visible = task.device_env.find("NVIDIA_VISIBLE_DEVICES");
  if (!nvidia_runtime || visible == task.device_env.end() || visible->second.empty())
    return;
  std::vector<std::string> ids = absl::StrSplit(visible->second, ',', absl::SkipEmpty());
  host["DeviceRequests"] = Json::array(
      {{{"Driver", "nvidia"}, {"DeviceIDs", ids}, {"Capabilities", Json::array({{"gpu"}})}}});
}

}  // namespace

absl::StatusOr<codec::Json> ContainerSpec(const TaskConfig& task,
                                          const codec::DockerTaskConfig& config,
                                          const PluginConfig& plugin, bool nvidia_runtime,
                                          const std::map<std::string, std::string>& pinned) {
  Json spec = ContainerPart(task, config, plugin);
  Json host = Json::object();
  if (absl::Status s = AddStorage(host, task, config, plugin, pinned); !s.ok())
    return s;
  AddResources(host, task, config);
  if (plugin.pids_limit > 0) {
    if (config.pids_limit > plugin.pids_limit) {
      return absl::InvalidArgumentError("pids_limit cannot be greater than the driver's limit of " +
                                        std::to_string(plugin.pids_limit));
    }
    host["PidsLimit"] = config.pids_limit > 0 ? config.pids_limit : plugin.pids_limit;
  }
  if (absl::Status s = AddNetwork(spec, host, task, config, task.ports); !s.ok())
    return s;
  if (absl::Status s = AddPrivileges(host, config, plugin); !s.ok())
    return s;
  if (absl::Status s = AddOptions(host, task, config); !s.ok())
    return s;
  AddGpus(host, task, nvidia_runtime);
  spec["HostConfig"] = std::move(host);
  return spec;
}

}  // namespace drover::drivers::docker
