#include "common/mounts.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace drover::common {

namespace fs = std::filesystem;

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 &&
          std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out.push_back(static_cast<char>(std::stoi(oct, nullptr, 8)));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

absl::StatusOr<std::vector<fs::path>> AllMountPoints() {
  std::ifstream in("/proc/self/mountinfo");
  if (!in) {
    return absl::UnavailableError("cannot read /proc/self/mountinfo");
  }
  std::vector<fs::path> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, mount_point;
    if (fields >> id >> parent >> dev >> root >> mount_point)
      out.emplace_back(Unescape(mount_point));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<fs::path>> MountsUnder(const fs::path& dir) {
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError("invalid path '" + dir.string() + "': " + ec.message());
  }
  auto all = AllMountPoints();
  if (!all.ok())
    return all.status();
  const std::string prefix = base.string() + "/";
  std::vector<fs::path> out;
  for (const fs::path& m : *all) {
    if (m.string().starts_with(prefix))
      out.push_back(m);
  }
  std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
    return a.string().size() > b.string().size();
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool IsMountPoint(const fs::path& path) {
  // A mount point sits on a different device than its parent: two stat calls rather
  // than a parse of mountinfo, which grows with every allocation's mounts. (A bind
  // mount of a directory onto the same file system would not be seen; Drover only
  // asks about its own tmpfs mounts.)
  struct stat self {};
  struct stat parent {};
  const fs::path up = path / "..";
  if (stat(path.c_str(), &self) != 0 || stat(up.c_str(), &parent) != 0)
    return false;
  return self.st_dev != parent.st_dev || self.st_ino == parent.st_ino;
}

uint64_t MountIdOf(int fd) {
#ifdef STATX_MNT_ID
  struct statx stx {};
  if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID) != 0)
    return stx.stx_mnt_id;
#endif
  struct stat st {};
  return fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_dev) : 0;
}

bool MountIdsKnown() {
#ifdef STATX_MNT_ID
  static const bool known = [] {
    struct statx stx {};
    return statx(AT_FDCWD, "/", 0, STATX_MNT_ID, &stx) == 0 && (stx.stx_mask & STATX_MNT_ID) != 0;
  }();
  return known;
#else
  return false;
#endif
}

absl::Status UnmountUnder(const fs::path& dir) {
  auto mounts = MountsUnder(dir);
  if (!mounts.ok())
    return mounts.status();
  std::string errors;
  for (const fs::path& m : *mounts) {
    if (umount2(m.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL &&
        errno != ENOENT) {
      errors +=
          (errors.empty() ? "" : "; ") + ("umount '" + m.string() + "': " + std::strerror(errno));
    }
  }
  return errors.empty() ? absl::OkStatus() : absl::InternalError(errors);
}

}  // namespace drover::common
