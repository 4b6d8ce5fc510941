#include "client/allocdir/alloc_dir.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/mounts.h"

namespace drover::allocdir {
namespace fs = std::filesystem;
namespace {

absl::Status MakeDir(const fs::path& p, fs::perms perms) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) {
    return absl::InternalError("failed to create directory '" + p.string() + "': " + ec.message());
  }
  fs::permissions(p, perms, ec);
  if (ec) {
    return absl::InternalError("failed to chmod '" + p.string() + "': " + ec.message());
  }
  return absl::OkStatus();
}

// Renames `from` onto `to`, first removing `to` if it is an empty directory.
absl::Status MoveDir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::is_directory(from, ec)) {
    return absl::OkStatus();  // nothing to take over
  }
  if (fs::is_directory(to, ec) && fs::is_empty(to, ec)) {
    fs::remove(to, ec);
  }
  fs::rename(from, to, ec);
  if (ec) {
    return absl::InternalError("failed to move '" + from.string() + "' to '" + to.string() +
                               "': " + ec.message());
  }
  return absl::OkStatus();
}

absl::Status MountTmpfs(const fs::path& p, int size_mb) {
  if (common::IsMountPoint(p)) {
    return absl::OkStatus();
  }
  const std::string opts = "size=" + std::to_string(size_mb) + "m,mode=0777";
  if (mount("tmpfs", p.c_str(), "tmpfs", MS_NOEXEC | MS_NOSUID | MS_NODEV, opts.c_str()) != 0) {
    return absl::InternalError("failed to mount tmpfs on '" + p.string() +
                               "': " + std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace

AllocDir::AllocDir(fs::path alloc_root, std::string alloc_id, AllocDirOptions options)
    : dir_(std::move(alloc_root) / std::move(alloc_id)), options_(options) {}

TaskDir AllocDir::task_dir(const std::string& task) const {
  const fs::path d = dir_ / task;
  return TaskDir{d, d / "local", d / "tmp", d / "secrets", d / "private"};
}

bool AllocDir::ValidTaskName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name != "alloc" &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

absl::Status AllocDir::Build() {
  const fs::perms all = fs::perms::all;
  if (absl::Status s =
          MakeDir(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
      !s.ok()) {
    return s;
  }
  for (const fs::path& p : {shared_dir(), data_dir(), logs_dir(), shared_dir() / "tmp"}) {
    if (absl::Status s = MakeDir(p, all); !s.ok()) {
      return s;
    }
  }
  std::lock_guard lock(mu_);
  built_ = true;
  return absl::OkStatus();
}

absl::StatusOr<TaskDir> AllocDir::BuildTaskDir(const std::string& task) {
  if (!ValidTaskName(task)) {
    return absl::InvalidArgumentError("invalid task name '" + task + "'");
  }
  {
    std::lock_guard lock(mu_);
    if (!built_) {
      return absl::FailedPreconditionError("alloc dir '" + dir_.string() + "' is not built");
    }
  }
  TaskDir td = task_dir(task);
  for (const fs::path& p : {td.dir, td.local, td.secrets, td.private_}) {
    if (absl::Status s = MakeDir(p, fs::perms::all); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = MakeDir(td.tmp, fs::perms::all | fs::perms::sticky_bit); !s.ok()) {
    return s;
  }
  if (options_.mount_tmpfs) {
    if (absl::Status s = MountTmpfs(td.secrets, options_.secrets_mb); !s.ok()) {
      return s;
    }
    if (absl::Status s = MountTmpfs(td.private_, 1); !s.ok()) {
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
  if (fs::exists(dir_, ec)) {
    if (absl::Status s = common::UnmountUnder(dir_); !s.ok()) {
      // Never walk into a mounted file system: leave the tree for a later attempt.
      return absl::InternalError("failed to unmount below alloc dir '" + dir_.string() +
                                 "': " + std::string(s.message()));
    }
  }
  fs::remove_all(dir_, ec);
  std::lock_guard lock(mu_);
  built_ = false;
  task_dirs_.clear();
  if (ec) {
    return absl::InternalError("failed to remove alloc dir '" + dir_.string() +
                               "': " + ec.message());
  }
  return absl::OkStatus();
}

absl::Status AllocDir::Move(const fs::path& from, const std::vector<std::string>& tasks) {
  {
    std::lock_guard lock(mu_);
    if (!built_) {
      return absl::FailedPreconditionError("alloc dir '" + dir_.string() + "' is not built");
    }
  }
  // The heavy part runs without the lock: paths are immutable and each target belongs
  // to this alloc, which is not running tasks yet.
  if (absl::Status s = MoveDir(from / "alloc" / "data", data_dir()); !s.ok()) {
    return s;
  }
  for (const std::string& task : tasks) {
    if (!ValidTaskName(task)) {
      return absl::InvalidArgumentError("invalid task name '" + task + "'");
    }
    const fs::path src = from / task / "local";
    std::error_code ec;
    if (!fs::is_directory(src, ec)) {
      continue;
    }
    if (absl::Status s = MakeDir(dir_ / task, fs::perms::all); !s.ok()) {
      return s;
    }
    if (absl::Status s = MoveDir(src, task_dir(task).local); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<fs::path> AllocDir::Resolve(const std::string& rel) const {
  const fs::path p(rel);
  if (p.is_absolute()) {
    return absl::InvalidArgumentError("path '" + rel + "' must be relative to the alloc dir");
  }
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(dir_, ec);
  const fs::path full = fs::weakly_canonical(dir_ / p, ec);
  if (ec) {
    return absl::InvalidArgumentError("invalid path '" + rel + "': " + ec.message());
  }
  auto [root_end, full_it] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  if (root_end != root.end()) {
    return absl::PermissionDeniedError("path '" + rel + "' escapes the alloc dir");
  }
  if (!fs::exists(full, ec)) {
    return absl::NotFoundError("path '" + rel + "' does not exist");
  }
  return full;
}

}  // namespace drover::allocdir
