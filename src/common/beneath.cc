#include "common/beneath.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>

#include "common/mounts.h"

namespace drover::common {

namespace {

// Symlinks followed in one resolution before it fails (the kernel's own limit).
constexpr int kMaxLinks = 40;
// openat2 answers EAGAIN when a rename or mount raced with a RESOLVE_BENEATH lookup.
constexpr int kOpenat2Retries = 8;
// Directory descriptors RemoveTreeAt holds at once; deeper trees are flattened.
constexpr size_t kMaxRemoveDepth = 64;
// Rescans of one directory that keeps gaining entries while it is being removed.
constexpr int kMaxRemoveRescans = 16;

std::atomic<bool> force_walk{false};

bool KernelHasOpenat2() {
  static const bool has = [] {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    const long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);
    if (fd < 0)
      return false;  // ENOSYS, or a seccomp filter that refuses it
    ::close(static_cast<int>(fd));
    return true;
  }();
  return has;
}

std::string Quote(std::string_view rel) {
  return "'" + std::string(rel.empty() ? "." : rel) + "'";
}

absl::Status CheckRel(std::string_view rel) {
  if (rel.size() >= PATH_MAX)
    return absl::InvalidArgumentError("path is longer than " + std::to_string(PATH_MAX) + " bytes");
  if (rel.find('\0') != std::string_view::npos)
    return absl::InvalidArgumentError("path contains a NUL byte");
  if (!rel.empty() && rel.front() == '/')
    return absl::PermissionDeniedError("path " + Quote(rel) + " is absolute");
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> ViaOpenat2(int root, const std::string& rel, int flags, Links links,
                                    mode_t mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) != 0 ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  if (links == Links::kRefuse)
    how.resolve |= RESOLVE_NO_SYMLINKS;
  for (int attempt = 0;; ++attempt) {
    const long fd = syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how);
    if (fd >= 0)
      return UniqueFd(static_cast<int>(fd));
    if (errno == EINTR || (errno == EAGAIN && attempt < kOpenat2Retries))
      continue;
    return ErrnoStatus(errno, "open " + Quote(rel));
  }
}

// Splits a relative path into its components, dropping empty ones and ".".
void PushComponents(std::string_view path, std::deque<std::string>& out) {
  std::deque<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos)
      end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (!part.empty() && part != ".")
      parts.emplace_back(part);
    start = end + 1;
  }
  out.insert(out.begin(), parts.begin(), parts.end());
}

absl::StatusOr<std::string> ReadLinkFd(int link_fd) {
  char buf[PATH_MAX];
  const ssize_t n = readlinkat(link_fd, "", buf, sizeof buf);
  if (n < 0)
    return ErrnoStatus(errno, "readlink");
  if (static_cast<size_t>(n) >= sizeof buf)
    return ErrnoStatus(ENAMETOOLONG, "readlink");
  return std::string(buf, static_cast<size_t>(n));
}

// The component walk: RESOLVE_BENEATH by hand.
absl::StatusOr<UniqueFd> Walk(int root, const std::string& rel, int flags, Links links,
                              mode_t mode) {
  const bool nofollow_last = (flags & O_NOFOLLOW) != 0;
  std::deque<std::string> todo;
  PushComponents(rel, todo);
  std::vector<UniqueFd> dirs;  // the directories entered below the root, in order
  auto current = [&] { return dirs.empty() ? root : dirs.back().get(); };
  int links_followed = 0;
  const std::string what = "open " + Quote(rel);
  if (todo.empty())
    todo.emplace_back(".");
  while (!todo.empty()) {
    const std::string name = std::move(todo.front());
    todo.pop_front();
    const bool last = todo.empty();
    if (name == "..") {
      if (dirs.empty())
        return ErrnoStatus(EXDEV, what);
      dirs.pop_back();
      if (last)
        todo.emplace_back(".");
      continue;
    }
    if (last) {
      const int fd = openat(current(), name.c_str(), flags | O_NOFOLLOW, mode);
      if (fd >= 0) {
        struct stat st {};
        // O_PATH | O_NOFOLLOW opens a symlink itself: follow it unless asked not to.
        if ((flags & O_PATH) == 0 || nofollow_last || fstat(fd, &st) != 0 || !S_ISLNK(st.st_mode))
          return UniqueFd(fd);
        ::close(fd);
      } else if (errno != ELOOP || nofollow_last) {
        return ErrnoStatus(errno, what);
      }
    }
    // An intermediate component, or a last one that is a symlink: look at it first.
    UniqueFd fd(openat(current(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid())
      return ErrnoStatus(errno, what);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0)
      return ErrnoStatus(errno, what);
    if (S_ISLNK(st.st_mode)) {
      if (links == Links::kRefuse)
        return absl::PermissionDeniedError(what + ": a symlink is on the path");
      if (++links_followed > kMaxLinks)
        return ErrnoStatus(ELOOP, what);
      auto target = ReadLinkFd(fd.get());
      if (!target.ok())
        return target.status();
      if (target->empty())
        return ErrnoStatus(ENOENT, what);
      if (target->front() == '/')
        return ErrnoStatus(EXDEV, what);
      PushComponents(*target, todo);
      if (todo.empty())
        todo.emplace_back(".");
      continue;
    }
    if (last)  // it was a symlink a moment ago: a concurrent swap; resolve it again
      return absl::UnavailableError(what + ": changed while it was opened");
    if (!S_ISDIR(st.st_mode))
      return ErrnoStatus(ENOTDIR, what);
    dirs.push_back(std::move(fd));
  }
  return ErrnoStatus(EINVAL, what);  // not reached: the loop returns on its last component
}

}  // namespace

absl::Status ErrnoStatus(int err, std::string_view what) {
  const std::string msg = std::string(what) + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EXDEV:
      return absl::PermissionDeniedError(std::string(what) + ": leaves the directory");
    case ELOOP:
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    case ENOTDIR:
    case EISDIR:
    case ENXIO:
      return absl::FailedPreconditionError(msg);
    case ENAMETOOLONG:
    case EINVAL:
      return absl::InvalidArgumentError(msg);
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOSPC:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

bool BeneathUsesOpenat2() {
  return !force_walk.load(std::memory_order_relaxed) && KernelHasOpenat2();
}

void ForceBeneathWalkForTesting(bool force) {
  force_walk.store(force, std::memory_order_relaxed);
}

absl::StatusOr<UniqueFd> OpenBeneath(int root, std::string_view rel, int flags, Links links,
                                     mode_t mode) {
  if (absl::Status s = CheckRel(rel); !s.ok())
    return s;
  flags |= O_CLOEXEC;
  // openat2 takes only these with O_PATH (open(2) would ignore the rest).
  flags = (flags & O_PATH) != 0 ? flags & (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                : flags | O_NOCTTY;
  const std::string path(rel);
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<UniqueFd> fd = BeneathUsesOpenat2() ? ViaOpenat2(root, path, flags, links, mode)
                                                       : Walk(root, path, flags, links, mode);
    // Unavailable: the walk saw a component change under it; resolve from the start.
    if (fd.ok() || !absl::IsUnavailable(fd.status()) || attempt >= kOpenat2Retries)
      return fd;
  }
}

absl::StatusOr<UniqueFd> MakeDirsBeneath(int root, std::string_view rel, mode_t mode) {
  if (absl::Status s = CheckRel(rel); !s.ok())
    return s;
  std::deque<std::string> parts;
  PushComponents(rel, parts);
  UniqueFd cur(fcntl(root, F_DUPFD_CLOEXEC, 0));
  if (!cur.valid())
    return ErrnoStatus(errno, "dup");
  const std::string what = "create directory " + Quote(rel);
  for (const std::string& name : parts) {
    if (name == "..")
      return ErrnoStatus(EXDEV, what);
    if (mkdirat(cur.get(), name.c_str(), mode) == 0) {
      // Set the mode through a descriptor: the name may already be something else.
      UniqueFd made(openat(cur.get(), name.c_str(),
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
      if (!made.valid())
        return ErrnoStatus(errno, what);
      if (fchmod(made.get(), mode) != 0)
        return ErrnoStatus(errno, what);
      cur = std::move(made);
      continue;
    }
    if (errno != EEXIST)
      return ErrnoStatus(errno, what);
    UniqueFd next(openat(cur.get(), name.c_str(),
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
    if (!next.valid()) {
      // ELOOP: a symlink; ENOTDIR: a file. Neither is a directory we may enter.
      return errno == ELOOP || errno == ENOTDIR
                 ? absl::FailedPreconditionError(what + ": '" + name + "' is not a directory")
                 : ErrnoStatus(errno, what);
    }
    cur = std::move(next);
  }
  return cur;
}

absl::StatusOr<std::vector<DirEntry>> ReadDirAt(int dir, size_t max_entries,
                                                const std::function<bool(std::string_view)>& keep) {
  const int copy = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  DIR* d = copy < 0 ? nullptr : fdopendir(copy);
  if (d == nullptr) {
    const int err = errno;
    if (copy >= 0)
      ::close(copy);
    return ErrnoStatus(err, "list directory");
  }
  rewinddir(d);
  std::vector<DirEntry> out;
  absl::Status status;
  errno = 0;
  while (const dirent* e = readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == ".." || (keep && !keep(name)))
      continue;
    if (out.size() >= max_entries) {
      status = absl::ResourceExhaustedError("directory has more than " +
                                            std::to_string(max_entries) + " entries");
      break;
    }
    DirEntry entry{.name = std::string(name)};
    if (fstatat(dir, e->d_name, &entry.st, AT_SYMLINK_NOFOLLOW) == 0)
      out.push_back(std::move(entry));
    errno = 0;
  }
  if (status.ok() && errno != 0)
    status = ErrnoStatus(errno, "list directory");
  closedir(d);
  if (!status.ok())
    return status;
  return out;
}

absl::StatusOr<std::string> ReadAt(int fd, int64_t offset, size_t max_bytes) {
  if (offset < 0)
    return absl::InvalidArgumentError("offset must not be negative");
  std::string out;
  out.resize(max_bytes);
  size_t got = 0;
  while (got < max_bytes) {
    const ssize_t n =
        pread(fd, out.data() + got, max_bytes - got, offset + static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return ErrnoStatus(errno, "read");
    }
    if (n == 0)
      break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

absl::StatusOr<UniqueFd> OpenRegularBeneath(int root, std::string_view rel, struct stat* st,
                                            Links links) {
  auto fd = OpenBeneath(root, rel, O_RDONLY | O_NONBLOCK, links);
  if (!fd.ok())
    return fd.status();
  if (fstat(fd->get(), st) != 0)
    return ErrnoStatus(errno, "stat " + Quote(rel));
  if (!S_ISREG(st->st_mode))
    return absl::FailedPreconditionError(Quote(rel) + " is not a regular file");
  return fd;
}

absl::StatusOr<UniqueFd> ReopenRegular(int path_fd) {
  struct stat st {};
  if (fstat(path_fd, &st) != 0)
    return ErrnoStatus(errno, "stat");
  if (!S_ISREG(st.st_mode))
    return absl::FailedPreconditionError("not a regular file");
  const std::string self = "/proc/self/fd/" + std::to_string(path_fd);
  UniqueFd fd(open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid())
    return ErrnoStatus(errno, "reopen");
  return fd;
}

namespace {

// One directory being emptied by RemoveTreeAt.
struct Level {
  UniqueFd fd;
  std::string name;  // in the level above (or in `parent` for the top)
  DIR* stream = nullptr;
  int idle_rescans = 0;         // rescans that found nothing moved up here since the last
  uint64_t flattened_seen = 0;  // RemoveTree::flattened at the last rescan
};

void CloseLevel(Level& level) {
  if (level.stream != nullptr) {
    closedir(level.stream);  // owns a duplicate of level.fd
    level.stream = nullptr;
  }
}

// The walk of RemoveTreeAt: a stack of open directories, never deeper than
// kMaxRemoveDepth; deeper subtrees are renamed up to the top directory and emptied from
// there.
class TreeRemover {
 public:
  explicit TreeRemover(int parent) : parent_(parent) {}
  ~TreeRemover() {
    for (Level& level : stack_)
      CloseLevel(level);
  }

  absl::Status Run(const std::string& name) {
    absl::Status status = Enter(parent_, name);
    while (status.ok() && !stack_.empty())
      status = Step();
    return status;
  }

 private:
  absl::Status Enter(int at, const std::string& child) {
    UniqueFd fd(openat(at, child.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid())
      return errno == ENOENT ? absl::OkStatus() : ErrnoStatus(errno, "open '" + child + "'");
    const uint64_t mount = MountIdOf(fd.get());
    if (stack_.empty())
      mount_ = mount;
    else if (mount != mount_)
      return absl::FailedPreconditionError("'" + child + "' is a mount point: not removed");
    const int copy = fcntl(fd.get(), F_DUPFD_CLOEXEC, 0);
    DIR* stream = copy < 0 ? nullptr : fdopendir(copy);
    if (stream == nullptr) {
      const int err = errno;
      if (copy >= 0)
        ::close(copy);
      return ErrnoStatus(err, "list '" + child + "'");
    }
    stack_.push_back(Level{std::move(fd), child, stream, 0, flattened_});
    return absl::OkStatus();
  }

  // The directory on top of the stack is fully listed: remove it, or list it again if
  // entries appeared meanwhile (subtrees moved up, or a writer that is still alive).
  absl::Status Finish(Level& level) {
    const int above = stack_.size() > 1 ? stack_[stack_.size() - 2].fd.get() : parent_;
    if (unlinkat(above, level.name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) {
      CloseLevel(level);
      stack_.pop_back();
      return absl::OkStatus();
    }
    if (errno != ENOTEMPTY)
      return ErrnoStatus(errno, "remove directory '" + level.name + "'");
    level.idle_rescans = level.flattened_seen == flattened_ ? level.idle_rescans + 1 : 0;
    level.flattened_seen = flattened_;
    if (level.idle_rescans > kMaxRemoveRescans)
      return ErrnoStatus(ENOTEMPTY, "remove directory '" + level.name + "'");
    rewinddir(level.stream);
    return absl::OkStatus();
  }

  absl::Status Step() {
    Level& level = stack_.back();
    errno = 0;
    const dirent* e = readdir(level.stream);
    if (e == nullptr) {
      if (errno != 0)
        return ErrnoStatus(errno, "list '" + level.name + "'");
      return Finish(level);
    }
    const std::string child = e->d_name;
    if (child == "." || child == "..")
      return absl::OkStatus();
    struct stat st {};
    if (fstatat(level.fd.get(), child.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return absl::OkStatus();  // gone already
    if (!S_ISDIR(st.st_mode)) {
      if (unlinkat(level.fd.get(), child.c_str(), 0) != 0 && errno != ENOENT)
        return ErrnoStatus(errno, "remove '" + child + "'");
      return absl::OkStatus();
    }
    if (stack_.size() < kMaxRemoveDepth)
      return Enter(level.fd.get(), child);
    // Too deep to hold one more descriptor: move the subtree up to the top.
    for (;;) {
      const std::string moved = ".drover-remove-" + std::to_string(++flattened_);
      if (renameat2(level.fd.get(), child.c_str(), stack_.front().fd.get(), moved.c_str(),
                    RENAME_NOREPLACE) == 0 ||
          errno == ENOENT) {
        return absl::OkStatus();
      }
      if (errno != EEXIST)
        return ErrnoStatus(errno, "move '" + child + "'");
    }
  }

  const int parent_;
  uint64_t mount_ = 0;
  uint64_t flattened_ = 0;
  std::vector<Level> stack_;
};

}  // namespace

absl::Status RemoveTreeAt(int parent, std::string_view name_view) {
  const std::string name(name_view);
  struct stat st {};
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? absl::OkStatus() : ErrnoStatus(errno, "stat '" + name + "'");
  if (!S_ISDIR(st.st_mode)) {
    if (unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT)
      return ErrnoStatus(errno, "remove '" + name + "'");
    return absl::OkStatus();
  }
  return TreeRemover(parent).Run(name);
}

absl::Status RemoveTree(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path().empty() ? "." : path.parent_path();
  UniqueFd dir(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    if (errno == ENOENT)
      return absl::OkStatus();
    return ErrnoStatus(errno, "open '" + parent.string() + "'");
  }
  absl::Status s = RemoveTreeAt(dir.get(), path.filename().string());
  if (!s.ok())
    return absl::Status(s.code(), "remove '" + path.string() + "': " + std::string(s.message()));
  return s;
}

absl::StatusOr<UniqueFd> OpenDirectory(const std::filesystem::path& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid())
    return ErrnoStatus(errno, "open '" + path.string() + "'");
  return fd;
}

}  // namespace drover::common
