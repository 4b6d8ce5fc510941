#include "supervisor/isolation.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace drover::supervisor {

namespace fs = std::filesystem;

namespace {

// The device nodes of a minimal /dev (what libcontainer gives a container).
struct DevNode {
  const char* name;
  unsigned major;
  unsigned minor;
};
constexpr DevNode kDevNodes[] = {{"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
                                 {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

bool IsUnder(const std::string& path, const std::string& prefix) {
  if (prefix == "/")
    return true;
  return path == prefix ||
         (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
          path[prefix.size()] == '/');
}

}  // namespace

std::string HostPathOf(const IsolationSpec& spec, const std::string& inside) {
  // The longest bind target that contains the path wins (binds may nest).
  const BindMount* best = nullptr;
  for (const BindMount& b : spec.binds) {
    if (IsUnder(inside, b.target) && (best == nullptr || b.target.size() > best->target.size()))
      best = &b;
  }
  if (best == nullptr)
    return spec.root + inside;
  return best->source + inside.substr(best->target == "/" ? 0 : best->target.size());
}

absl::StatusOr<IsolationPlan> PrepareIsolation(const IsolationSpec& spec) {
  IsolationPlan plan;
  std::error_code ec;
  if (!fs::is_directory(spec.root, ec))
    return absl::FailedPreconditionError("task root '" + spec.root + "' is not a directory");
  plan.root = spec.root;
  for (const BindMount& b : spec.binds) {
    const fs::file_status st = fs::status(b.source, ec);
    if (ec || !fs::exists(st))
      continue;
    const fs::path target = fs::path(spec.root) / b.target.substr(1);
    if (fs::is_directory(st)) {
      fs::create_directories(target, ec);
    } else {
      fs::create_directories(target.parent_path(), ec);
      if (!ec && !fs::exists(target)) {
        const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
          close(fd);
      }
    }
    if (ec) {
      return absl::InternalError("failed to create mount point '" + target.string() +
                                 "': " + ec.message());
    }
    plan.binds.push_back({b.source, target.string(), b.readonly});
  }
  const fs::path root(spec.root);
  plan.proc = (root / "proc").string();
  plan.dev = (root / "dev").string();
  plan.dev_shm = (root / "dev" / "shm").string();
  for (const fs::path& d : {root / "proc", root / "dev"}) {
    fs::create_directories(d, ec);
    if (ec)
      return absl::InternalError("failed to create '" + d.string() + "': " + ec.message());
  }
  for (const DevNode& n : kDevNodes)
    plan.nodes.push_back({(root / "dev" / n.name).string(), n.major, n.minor, false});
  for (const DeviceNode& d : spec.devices) {
    // Only what really lives under /dev (after symlinks) can be handed to a task.
    std::error_code rec;
    const fs::path real = fs::canonical(d.host_path, rec);
    if (rec) {
      return absl::FailedPreconditionError("device '" + d.host_path +
                                           "' is not available: " + rec.message());
    }
    if (real.string().rfind("/dev/", 0) != 0)
      return absl::FailedPreconditionError("device '" + d.host_path + "' is not under /dev");
    struct stat st {};
    if (stat(real.c_str(), &st) != 0) {
      return absl::FailedPreconditionError("device '" + d.host_path +
                                           "' is not available: " + std::strerror(errno));
    }
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
      return absl::FailedPreconditionError("'" + d.host_path + "' is not a device node");
    const fs::path inside = root / d.task_path.substr(1);
    // Directories between /dev and the node ("/dev/dri/card0" needs /dev/dri).
    for (fs::path dir = inside.parent_path(); dir != root / "dev" && dir.has_relative_path();
         dir = dir.parent_path()) {
      plan.dev_dirs.insert(plan.dev_dirs.begin(), dir.string());
    }
    unsigned mode = 0;
    if (d.permissions.empty() || d.permissions.find('r') != std::string::npos)
      mode |= 0444;
    if (d.permissions.empty() || d.permissions.find('w') != std::string::npos)
      mode |= 0222;
    plan.nodes.push_back(
        {inside.string(), major(st.st_rdev), minor(st.st_rdev), S_ISBLK(st.st_mode), mode});
  }
  plan.links = {{(root / "dev" / "fd").string(), "/proc/self/fd"},
                {(root / "dev" / "stdin").string(), "/proc/self/fd/0"},
                {(root / "dev" / "stdout").string(), "/proc/self/fd/1"},
                {(root / "dev" / "stderr").string(), "/proc/self/fd/2"}};
  return plan;
}

const char* EnterIsolation(const IsolationPlan& plan) {
  // Nothing mounted from here on may propagate back to the host.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return "make mounts private";
  for (const IsolationPlan::Mount& m : plan.binds) {
    if (mount(m.source.c_str(), m.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return "bind mount";
    if (m.readonly && mount(nullptr, m.target.c_str(), nullptr,
                            MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, nullptr) != 0) {
      return "remount read-only";
    }
  }
  // /proc of the new pid namespace: the task sees only its own processes.
  if (mount("proc", plan.proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return "mount /proc";
  if (mount("tmpfs", plan.dev.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") != 0)
    return "mount /dev";
  const mode_t old = umask(0);
  for (const std::string& dir : plan.dev_dirs) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      umask(old);
      return "mkdir in /dev";
    }
  }
  for (const IsolationPlan::Node& n : plan.nodes) {
    const mode_t type = n.block ? S_IFBLK : S_IFCHR;
    if (mknod(n.path.c_str(), type | n.mode, makedev(n.major, n.minor)) != 0) {
      umask(old);
      return "mknod";
    }
  }
  if (mkdir(plan.dev_shm.c_str(), 01777) != 0 ||
      mount("shm", plan.dev_shm.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=65536k") !=
          0) {
    umask(old);
    return "mount /dev/shm";
  }
  umask(old);
  for (const auto& [link, target] : plan.links) {
    if (symlink(target.c_str(), link.c_str()) != 0)
      return "symlink in /dev";
  }
  if (chroot(plan.root.c_str()) != 0)
    return "chroot";
  if (chdir("/") != 0)
    return "chdir /";
  return nullptr;
}

}  // namespace drover::supervisor
