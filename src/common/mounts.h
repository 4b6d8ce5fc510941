// Mount points from /proc/self/mountinfo, and unmounting everything below a directory.
// Used where a tree may hold mounts (an alloc dir's tmpfs secrets) before it is removed:
// removing a tree with live mounts in it would either fail or, for bind mounts, reach
// into the mounted file system.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace drover::common {

// Mount points strictly below `dir` (not `dir` itself), deepest first.
absl::StatusOr<std::vector<std::filesystem::path>> MountsUnder(const std::filesystem::path& dir);
// Whether `path` is itself a mount point (of a file system other than its parent's).
bool IsMountPoint(const std::filesystem::path& path);
// Which mount an open file is on: the kernel's mount id (bind mounts of one file system
// differ there), or the device where the kernel has no mount ids. Equal for two files
// on the same mount.
uint64_t MountIdOf(int fd);
// Whether the kernel gives mount ids (statx STATX_MNT_ID, Linux 5.8): only then does
// MountIdOf tell a bind mount of the same file system from its parent.
bool MountIdsKnown();
// Lazily unmounts (MNT_DETACH) every mount below `dir`, deepest first. Errors name the
// mount point; every mount is attempted.
absl::Status UnmountUnder(const std::filesystem::path& dir);

}  // namespace drover::common
