#include "supervisor/isolation.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/beneath.h"

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

// "/a/b/" -> "a/b"; empty for "/". Refuses "." and ".." components.
absl::StatusOr<std::string> RelativeInside(const std::string& inside, const char* what) {
  if (inside.empty() || inside[0] != '/')
    return absl::InvalidArgumentError(std::string(what) + " '" + inside + "' must be absolute");
  std::string rel;
  for (const auto& part : fs::path(inside).relative_path()) {
    const std::string p = part.string();
    if (p.empty())
      continue;
    if (p == "." || p == "..")
      return absl::InvalidArgumentError(std::string(what) + " '" + inside + "' has '" + p + "'");
    rel += (rel.empty() ? "" : "/") + p;
  }
  return rel;
}

// Creates the mount point `rel` beneath the root (a directory, or an empty file for a
// file bind) without following anything, and checks it is of the kind needed.
absl::Status MakeMountPoint(int root, const std::string& rel, bool dir) {
  const fs::path p(rel);
  const std::string parent = p.parent_path().string();
  const std::string name = p.filename().string();
  auto at = common::MakeDirsBeneath(root, parent, 0755);
  if (!at.ok())
    return absl::Status(at.status().code(), "mount point '/" + rel + "' in the task's root: " +
                                                std::string(at.status().message()));
  if (dir) {
    if (mkdirat(at->get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      return common::ErrnoStatus(errno, "create mount point '/" + rel + "'");
  } else {
    const int fd = openat(at->get(), name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd >= 0)
      close(fd);
    else if (errno != EEXIST)
      return common::ErrnoStatus(errno, "create mount point '/" + rel + "'");
  }
  struct stat st {};
  if (fstatat(at->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return common::ErrnoStatus(errno, "stat mount point '/" + rel + "'");
  if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError("mount point '/" + rel + "' in the task's root is not a " +
                                         (dir ? "directory" : "regular file"));
  }
  return absl::OkStatus();
}

// What of `rel` exists beneath the open directory `dir`.
InsideCheck CheckBeneath(int dir, const std::string& rel) {
  auto fd = common::OpenBeneath(dir, rel, O_PATH);
  if (!fd.ok()) {
    if (absl::IsNotFound(fd.status())) {
      // Missing for sure only if no link was on the way: one may lead into a bind
      // target, empty here and filled only inside the task's root.
      auto direct = common::OpenBeneath(dir, rel, O_PATH, common::Links::kRefuse);
      return absl::IsNotFound(direct.status()) ? InsideCheck::kMissing : InsideCheck::kUnknown;
    }
    return absl::IsPermissionDenied(fd.status()) ? InsideCheck::kUnknown
                                                 : InsideCheck::kNotExecutable;
  }
  struct stat st {};
  if (fstat(fd->get(), &st) != 0)
    return InsideCheck::kUnknown;
  return S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0 ? InsideCheck::kExecutable
                                                         : InsideCheck::kNotExecutable;
}

// Checks a device the task was given and adds its node (and the directories above it)
// to what the child makes in the task's /dev.
absl::Status AddDevice(const DeviceNode& d, IsolationPlan& plan) {
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
  auto in_dev = RelativeInside(d.task_path, "device path");
  if (!in_dev.ok())
    return in_dev.status();
  if (!in_dev->starts_with("dev/"))
    return absl::InvalidArgumentError("device path '" + d.task_path + "' is not under /dev");
  const fs::path inside = in_dev->substr(4);
  // Directories between /dev and the node ("/dev/dri/card0" needs /dev/dri).
  size_t at = plan.dev_dirs.size();
  for (fs::path dir = inside.parent_path(); !dir.empty(); dir = dir.parent_path())
    plan.dev_dirs.insert(plan.dev_dirs.begin() + static_cast<std::ptrdiff_t>(at), dir.string());
  unsigned mode = 0;
  if (d.permissions.empty() || d.permissions.find('r') != std::string::npos)
    mode |= 0444;
  if (d.permissions.empty() || d.permissions.find('w') != std::string::npos)
    mode |= 0222;
  plan.nodes.push_back(
      {inside.string(), major(st.st_rdev), minor(st.st_rdev), S_ISBLK(st.st_mode), mode});
  return absl::OkStatus();
}

// --- In the child: async-signal-safe only. ---

// "/proc/self/fd/<fd>" into `buf`.
const char* ProcFdPath(int fd, char (&buf)[40]) {
  static constexpr char kPrefix[] = "/proc/self/fd/";
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && n < 15);
  size_t at = 0;
  for (const char c : kPrefix) {
    if (c != '\0')
      buf[at++] = c;
  }
  while (n > 0)
    buf[at++] = digits[--n];
  buf[at] = '\0';
  return buf;
}

int OpenMountPoint(int root, const char* rel) {
  return OpenMountPointInChild(root, rel, /*walk=*/false);
}

// mount(2) onto the open `fd` rather than onto a path.
int MountOnto(const char* source, int fd, const char* type, unsigned long flags, const char* data) {
  char target[40];
  return mount(source, ProcFdPath(fd, target), type, flags, data);
}

}  // namespace

int OpenMountPointInChild(int root, const char* rel, bool walk) {
  const char* path = rel[0] == '\0' ? "." : rel;
  if (!walk) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const int fd = static_cast<int>(syscall(SYS_openat2, root, path, &how, sizeof how));
    // No openat2 (before Linux 5.6, or filtered by a container's seccomp): walk.
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != E2BIG))
      return fd;
  }
  // One component at a time, never following a link: directories on the way are opened
  // O_DIRECTORY|O_NOFOLLOW (a link there is ENOTDIR), the last is checked not to be one.
  int cur = root;
  const char* p = path;
  for (;;) {
    while (*p == '/')
      ++p;
    const char* end = p;
    while (*end != '\0' && *end != '/')
      ++end;
    const char* next = end;
    while (*next == '/')
      ++next;
    const bool last = *next == '\0';
    char name[256];
    const size_t len = static_cast<size_t>(end - p);
    const bool dotdot = len == 2 && p[0] == '.' && p[1] == '.';
    if (len == 0 || dotdot || len >= sizeof name) {
      if (cur != root)
        close(cur);
      errno = len >= sizeof name ? ENAMETOOLONG : EINVAL;
      return -1;
    }
    std::memcpy(name, p, len);
    name[len] = '\0';
    const int fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY));
    const int saved = errno;
    if (cur != root)
      close(cur);
    if (fd < 0) {
      errno = saved;
      return -1;
    }
    if (last) {
      struct stat st {};
      if (fstat(fd, &st) != 0 || S_ISLNK(st.st_mode)) {
        close(fd);
        errno = ELOOP;
        return -1;
      }
      return fd;
    }
    cur = fd;
    p = next;
  }
}

InsideCheck CheckInside(const IsolationSpec& spec, const std::string& inside) {
  // The longest bind target that contains the path wins (binds may nest).
  const BindMount* best = nullptr;
  for (const BindMount& b : spec.binds) {
    if (IsUnder(inside, b.target) && (best == nullptr || b.target.size() > best->target.size()))
      best = &b;
  }
  auto rel = RelativeInside(inside, "command");
  if (!rel.ok())
    return InsideCheck::kMissing;
  if (best == nullptr) {
    common::UniqueFd root(open(spec.root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return root.valid() ? CheckBeneath(root.get(), *rel) : InsideCheck::kUnknown;
  }
  // The bind's source is a host path the agent chose (and trusts); what is below it may
  // be the task's (its alloc dir).
  common::UniqueFd source(open(best->source.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!source.valid())
    return InsideCheck::kUnknown;
  auto within = RelativeInside(best->target, "bind target");
  const std::string below = within.ok() && !within->empty() ? rel->substr(within->size()) : *rel;
  return CheckBeneath(source.get(), below.empty() || below[0] != '/' ? below : below.substr(1));
}

absl::StatusOr<IsolationPlan> PrepareIsolation(const IsolationSpec& spec) {
  IsolationPlan plan;
  plan.root.reset(open(spec.root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!plan.root.valid()) {
    return absl::FailedPreconditionError("task root '" + spec.root +
                                         "' is not a directory: " + std::strerror(errno));
  }
  const int root = plan.root.get();
  struct stat root_st {};
  if (fstat(root, &root_st) != 0)
    return absl::InternalError("stat task root '" + spec.root + "': " + std::strerror(errno));
  plan.root_path = spec.root;
  plan.root_dev = root_st.st_dev;
  plan.root_ino = root_st.st_ino;
  std::vector<std::string> targets;  // of the binds so far: a nested one is made in the child
  for (const BindMount& b : spec.binds) {
    std::error_code ec;
    const fs::file_status st = fs::status(b.source, ec);
    if (ec || !fs::exists(st))
      continue;
    auto rel = RelativeInside(b.target, "bind target");
    if (!rel.ok())
      return rel.status();
    if (rel->empty())
      return absl::InvalidArgumentError("a bind cannot replace the task's root");
    bool nested = false;
    for (const std::string& t : targets)
      nested = nested || IsUnder("/" + *rel, "/" + t);
    if (!nested) {
      if (absl::Status s = MakeMountPoint(root, *rel, fs::is_directory(st)); !s.ok())
        return s;
    }
    targets.push_back(*rel);
    plan.binds.push_back({b.source, *rel, b.readonly});
  }
  for (const char* d : {"proc", "dev"}) {
    if (absl::Status s = MakeMountPoint(root, d, true); !s.ok())
      return s;
  }
  for (const DevNode& n : kDevNodes)
    plan.nodes.push_back({n.name, n.major, n.minor, false});
  for (const DeviceNode& d : spec.devices) {
    if (absl::Status st = AddDevice(d, plan); !st.ok())
      return st;
  }
  plan.links = {{"fd", "/proc/self/fd"},
                {"stdin", "/proc/self/fd/0"},
                {"stdout", "/proc/self/fd/1"},
                {"stderr", "/proc/self/fd/2"}};
  return plan;
}

const char* EnterIsolation(const IsolationPlan& plan) {
  // Nothing mounted from here on may propagate back to the host.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return "make mounts private";
  // The root as this mount namespace sees it; the same directory as on the host.
  const int root = open(plan.root_path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (root < 0 || fstat(root, &st) != 0)
    return "open task root";
  if (st.st_dev != plan.root_dev || st.st_ino != plan.root_ino) {
    errno = EXDEV;
    return "task root changed";
  }
  for (const IsolationPlan::Mount& m : plan.binds) {
    const int at = OpenMountPoint(root, m.target.c_str());
    if (at < 0)
      return "open mount point";
    const int bound = MountOnto(m.source.c_str(), at, nullptr, MS_BIND | MS_REC, nullptr);
    close(at);
    if (bound != 0)
      return "bind mount";
    if (!m.readonly)
      continue;
    // Reopened: the remount must name the new mount, not the directory under it.
    const int mounted = OpenMountPoint(root, m.target.c_str());
    if (mounted < 0)
      return "open mount point";
    const int remounted =
        MountOnto(nullptr, mounted, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, nullptr);
    close(mounted);
    if (remounted != 0)
      return "remount read-only";
  }
  // /proc of the new pid namespace: the task sees only its own processes.
  const int proc = OpenMountPoint(root, "proc");
  if (proc < 0 || MountOnto("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return "mount /proc";
  close(proc);
  const int dev_point = OpenMountPoint(root, "dev");
  if (dev_point < 0 ||
      MountOnto("tmpfs", dev_point, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") != 0)
    return "mount /dev";
  close(dev_point);
  // The fresh tmpfs: everything in /dev is made relative to it.
  const int dev = openat(root, "dev", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dev < 0)
    return "open /dev";
  const mode_t old = umask(0);
  const char* failed = nullptr;
  for (const std::string& dir : plan.dev_dirs) {
    if (failed == nullptr && mkdirat(dev, dir.c_str(), 0755) != 0 && errno != EEXIST)
      failed = "mkdir in /dev";
  }
  for (const IsolationPlan::Node& n : plan.nodes) {
    const mode_t type = n.block ? S_IFBLK : S_IFCHR;
    if (failed == nullptr &&
        mknodat(dev, n.path.c_str(), type | n.mode, makedev(n.major, n.minor)) != 0)
      failed = "mknod";
  }
  if (failed == nullptr && mkdirat(dev, "shm", 01777) != 0)
    failed = "mount /dev/shm";
  umask(old);
  if (failed != nullptr)
    return failed;
  const int shm = openat(dev, "shm", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (shm < 0 || MountOnto("shm", shm, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=65536k") != 0)
    return "mount /dev/shm";
  close(shm);
  for (const auto& [link, target] : plan.links) {
    if (symlinkat(target.c_str(), dev, link.c_str()) != 0)
      return "symlink in /dev";
  }
  close(dev);
  if (fchdir(root) != 0 || chroot(".") != 0)
    return "chroot";
  if (chdir("/") != 0)
    return "chdir /";
  return nullptr;
}

}  // namespace drover::supervisor
