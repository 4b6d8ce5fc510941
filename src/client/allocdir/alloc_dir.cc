#include "client/allocdir/alloc_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "common/beneath.h"
#include "common/mounts.h"
#include "common/status_macros.h"

namespace drover::allocdir {
namespace fs = std::filesystem;
namespace {

using common::UniqueFd;

// Modes (docs/security.md). The alloc dir itself only lets others pass through; the
// shared dirs are for every task of the group, which may run as different users.
constexpr mode_t kAllocDirMode = 0711;
constexpr mode_t kSharedDirMode = 0755;  // alloc/ and alloc/logs: only the agent writes
constexpr mode_t kSharedDataMode = 0777;
constexpr mode_t kSharedTmpMode = 01777;
constexpr mode_t kTaskDirMode = 0755;
constexpr mode_t kTaskTmpMode = 01777;
constexpr mode_t kPrivateMode = 0700;  // secrets (the task's user) and private (the agent)

std::string Quoted(const fs::path& p) {
  return "'" + p.string() + "'";
}

// Makes sure `name` in `parent` is a directory (creating it) with `mode` and, when
// given, `owner`, without following a symlink a task may have put there; returns it
// opened. Applied on every build, so existing dirs get today's modes.
absl::StatusOr<UniqueFd> EnsureDir(int parent, const std::string& name, mode_t mode,
                                   const std::optional<DirOwner>& owner, const fs::path& shown) {
  if (mkdirat(parent, name.c_str(), mode) != 0 && errno != EEXIST)
    return common::ErrnoStatus(errno, "failed to create directory " + Quoted(shown));
  UniqueFd fd(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ELOOP || errno == ENOTDIR)
      return absl::FailedPreconditionError(Quoted(shown) + " is not a directory");
    return common::ErrnoStatus(errno, "failed to open directory " + Quoted(shown));
  }
  if (owner && fchown(fd.get(), owner->uid, owner->gid) != 0)
    return common::ErrnoStatus(errno, "failed to chown " + Quoted(shown));
  if (fchmod(fd.get(), mode) != 0)
    return common::ErrnoStatus(errno, "failed to chmod " + Quoted(shown));
  return fd;
}

// Mounts a tmpfs on the open directory `dir` unless something is mounted there already
// (the mount goes through the descriptor: a path could have been swapped for a link).
absl::Status MountTmpfsAt(int parent, int dir, int size_mb, mode_t mode,
                          const std::optional<DirOwner>& owner, const fs::path& shown) {
  if (common::MountIdOf(dir) != common::MountIdOf(parent))
    return absl::OkStatus();
  char opts[128];
  std::snprintf(opts, sizeof opts, "size=%dm,mode=%04o", size_mb, static_cast<unsigned>(mode));
  std::string options = opts;
  if (owner)
    options += ",uid=" + std::to_string(owner->uid) + ",gid=" + std::to_string(owner->gid);
  const std::string target = "/proc/self/fd/" + std::to_string(dir);
  if (mount("tmpfs", target.c_str(), "tmpfs", MS_NOEXEC | MS_NOSUID | MS_NODEV, options.c_str()) !=
      0) {
    return absl::InternalError("failed to mount tmpfs on " + Quoted(shown) + ": " +
                               std::strerror(errno));
  }
  return absl::OkStatus();
}

// Unmounts the tmpfs mounts BuildTaskDir makes (every <task>/secrets and
// <task>/private below `dir`), through descriptors opened without following a symlink,
// and without reading /proc/self/mountinfo: with 1,000 allocations a node holds 2,000
// such mounts, and reading them all for each allocation made collecting 1,000
// allocations cost 4.6-5.7 CPU-seconds. Anything else mounted below is left to the
// caller.
void UnmountTaskTmpfs(const fs::path& dir) {
  auto root = common::OpenDirectory(dir);
  if (!root.ok())
    return;
  UniqueFd listing(openat(root->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* entries = listing.valid() ? fdopendir(listing.get()) : nullptr;
  if (entries == nullptr)
    return;
  (void)listing.release();  // closedir closes it
  while (const dirent* e = readdir(entries)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..")
      continue;
    UniqueFd task(openat(root->get(), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!task.valid())
      continue;
    const uint64_t task_mount = common::MountIdOf(task.get());
    for (const char* sub : {"secrets", "private"}) {
      UniqueFd mounted(openat(task.get(), sub, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!mounted.valid() || common::MountIdOf(mounted.get()) == task_mount)
        continue;
      // The descriptor's own path names the mount's root, wherever the tree was moved.
      const std::string target = "/proc/self/fd/" + std::to_string(mounted.get());
      (void)umount2(target.c_str(), MNT_DETACH);
    }
  }
  closedir(entries);
}

// Renames the directory `name` of `from` onto the same name in `to`, replacing an empty
// directory there. Only a real directory moves: a symlink a task left is not followed
// and not taken along.
absl::Status MoveDirAt(int from, int to, const std::string& name, const fs::path& from_shown,
                       const fs::path& to_shown) {
  struct stat st {};
  if (fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
    return absl::OkStatus();  // nothing to take over
  if (unlinkat(to, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && errno != ENOTEMPTY &&
      errno != EEXIST) {
    return common::ErrnoStatus(errno, "failed to replace " + Quoted(to_shown));
  }
  if (renameat2(from, name.c_str(), to, name.c_str(), RENAME_NOREPLACE) != 0) {
    return absl::InternalError("failed to move " + Quoted(from_shown) + " to " + Quoted(to_shown) +
                               ": " + std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<DirOwner>> OwnerFor(const std::string& user) {
  if (user.empty() || geteuid() != 0)
    return std::nullopt;
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
    return absl::NotFoundError("user \"" + user + "\" not found");
  if (pw.pw_uid == geteuid())
    return std::nullopt;
  return DirOwner{.uid = pw.pw_uid, .gid = pw.pw_gid};
}

AllocDir::AllocDir(fs::path alloc_root, std::string alloc_id, AllocDirOptions options)
    : dir_((std::move(alloc_root) / std::move(alloc_id)).string()), options_(options) {}

TaskDir AllocDir::task_dir(const std::string& task) const {
  const fs::path d = dir() / task;
  return TaskDir{d, d / "local", d / "tmp", d / "secrets", d / "private"};
}

bool AllocDir::ValidTaskName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name != "alloc" &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

absl::StatusOr<UniqueFd> AllocDir::OpenOrCreate() const {
  std::error_code ec;
  fs::create_directories(dir().parent_path(), ec);  // the agent's own alloc root
  if (ec)
    return absl::InternalError("failed to create directory " + Quoted(dir().parent_path()) + ": " +
                               ec.message());
  auto root = common::OpenDirectory(dir().parent_path());
  if (!root.ok())
    return root.status();
  if (fchmod(root->get(), kAllocDirMode) != 0)
    return common::ErrnoStatus(errno, "failed to chmod " + Quoted(dir().parent_path()));
  return EnsureDir(root->get(), dir().filename().string(), kAllocDirMode, std::nullopt, dir());
}

absl::Status AllocDir::Build() {
  auto dir = OpenOrCreate();
  if (!dir.ok())
    return dir.status();
  auto shared = EnsureDir(dir->get(), "alloc", kSharedDirMode, std::nullopt, shared_dir());
  if (!shared.ok())
    return shared.status();
  const struct {
    const char* name;
    mode_t mode;
  } kShared[] = {{"data", kSharedDataMode}, {"logs", kSharedDirMode}, {"tmp", kSharedTmpMode}};
  for (const auto& d : kShared) {
    auto made = EnsureDir(shared->get(), d.name, d.mode, std::nullopt, shared_dir() / d.name);
    if (!made.ok())
      return made.status();
  }
  std::lock_guard lock(mu_);
  built_ = true;
  return absl::OkStatus();
}

absl::StatusOr<TaskDir> AllocDir::BuildTaskDir(const std::string& task,
                                               const std::optional<DirOwner>& owner,
                                               bool open_to_all) {
  const mode_t local_mode = open_to_all ? 0777 : kTaskDirMode;
  const mode_t secrets_mode = open_to_all ? 0777 : kPrivateMode;
  if (!ValidTaskName(task)) {
    return absl::InvalidArgumentError("invalid task name '" + task + "'");
  }
  {
    std::lock_guard lock(mu_);
    if (!built_) {
      return absl::FailedPreconditionError("alloc dir '" + dir().string() + "' is not built");
    }
  }
  TaskDir td = task_dir(task);
  auto dir = common::OpenDirectory(this->dir());
  if (!dir.ok())
    return dir.status();
  // Every directory is made through descriptors: a task that ran here before may have
  // replaced any of them with a symlink or a FIFO.
  auto tfd = EnsureDir(dir->get(), task, kTaskDirMode, owner, td.dir);
  if (!tfd.ok())
    return tfd.status();
  auto local = EnsureDir(tfd->get(), "local", local_mode, owner, td.local);
  if (!local.ok())
    return local.status();
  auto tmp = EnsureDir(tfd->get(), "tmp", kTaskTmpMode, owner, td.tmp);
  if (!tmp.ok())
    return tmp.status();
  auto secrets = EnsureDir(tfd->get(), "secrets", secrets_mode, owner, td.secrets);
  if (!secrets.ok())
    return secrets.status();
  auto priv = EnsureDir(tfd->get(), "private", kPrivateMode, std::nullopt, td.private_);
  if (!priv.ok())
    return priv.status();
  if (options_.mount_tmpfs) {
    if (absl::Status s = MountTmpfsAt(tfd->get(), secrets->get(), options_.secrets_mb, secrets_mode,
                                      owner, td.secrets);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            MountTmpfsAt(tfd->get(), priv->get(), 1, kPrivateMode, std::nullopt, td.private_);
        !s.ok()) {
      return s;
    }
  }
  std::lock_guard lock(mu_);
  task_dirs_.insert(task);
  return td;
}

bool AllocDir::TaskDirBuilt(const std::string& task) const {
  std::lock_guard lock(mu_);
  return task_dirs_.contains(task);
}

absl::Status AllocDir::Destroy() {
  std::error_code ec;
  const bool exists = fs::exists(dir(), ec);
  // Tasks wrote into this tree: it is removed through descriptors, following no
  // symlink and stopping at any mount point left (told apart by mount id, so a bind
  // mount of the same file system too). Our own tmpfs mounts go first, cheaply; only
  // if something else is mounted below is every mount under the dir found and undone.
  const bool own_mounts_first = exists && common::MountIdsKnown();
  if (own_mounts_first)
    UnmountTaskTmpfs(dir());
  absl::Status removed =
      own_mounts_first ? common::RemoveTree(dir()) : absl::FailedPreconditionError("not tried");
  if (exists && !removed.ok()) {
    if (absl::Status s = common::UnmountUnder(dir()); !s.ok()) {
      // Never walk into a mounted file system: leave the tree for a later attempt.
      return absl::InternalError("failed to unmount below alloc dir '" + dir().string() +
                                 "': " + std::string(s.message()));
    }
  }
  if (!removed.ok())
    removed = common::RemoveTree(dir());
  std::lock_guard lock(mu_);
  built_ = false;
  task_dirs_.clear();
  if (!removed.ok()) {
    return absl::Status(removed.code(), "failed to remove alloc dir '" + dir().string() +
                                            "': " + std::string(removed.message()));
  }
  return absl::OkStatus();
}

absl::Status AllocDir::Move(const fs::path& from, const std::vector<std::string>& tasks) {
  {
    std::lock_guard lock(mu_);
    if (!built_) {
      return absl::FailedPreconditionError("alloc dir '" + dir().string() + "' is not built");
    }
  }
  // The heavy part runs without the lock: paths are immutable and each target belongs
  // to this alloc, which is not running tasks yet. The previous alloc's tasks could
  // write into its tree, so nothing there is followed: only real directories move.
  auto src = common::OpenDirectory(from);
  if (!src.ok())
    return absl::IsNotFound(src.status()) ? absl::OkStatus() : src.status();
  auto dst = common::OpenDirectory(dir());
  if (!dst.ok())
    return dst.status();
  auto src_shared =
      common::OpenBeneath(src->get(), "alloc", O_RDONLY | O_DIRECTORY, common::Links::kRefuse);
  auto dst_shared =
      common::OpenBeneath(dst->get(), "alloc", O_RDONLY | O_DIRECTORY, common::Links::kRefuse);
  if (!dst_shared.ok())
    return dst_shared.status();
  if (src_shared.ok()) {
    DROVER_RETURN_IF_ERROR(MoveDirAt(src_shared->get(), dst_shared->get(), "data",
                                     from / "alloc" / "data", data_dir()));
  }
  for (const std::string& task : tasks) {
    if (!ValidTaskName(task)) {
      return absl::InvalidArgumentError("invalid task name '" + task + "'");
    }
    auto src_task =
        common::OpenBeneath(src->get(), task, O_RDONLY | O_DIRECTORY, common::Links::kRefuse);
    struct stat st {};
    if (!src_task.ok() || fstatat(src_task->get(), "local", &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode)) {
      continue;
    }
    auto dst_task = EnsureDir(dst->get(), task, kTaskDirMode, std::nullopt, dir() / task);
    if (!dst_task.ok())
      return dst_task.status();
    DROVER_RETURN_IF_ERROR(MoveDirAt(src_task->get(), dst_task->get(), "local",
                                     from / task / "local", task_dir(task).local));
  }
  return absl::OkStatus();
}

}  // namespace drover::allocdir
