// Paths that a task or a request can influence, opened without ever leaving a directory.
// This is the one way Drover touches such paths (the fs API, snapshots, migration, log
// files, garbage collection, the supervisor's mount points): see docs/security.md.
//
// Every function takes a directory descriptor (the root) and a path relative to it, and
// resolution never leaves the root:
//   - absolute paths, ".." above the root, and symlinks whose target is absolute or
//     climbs above the root are refused (PermissionDenied);
//   - magic links (/proc/<pid>/fd/...) are never followed;
//   - with Links::kRefuse no symlink at all is followed (PermissionDenied);
//   - O_NOFOLLOW in `flags` leaves the last component unfollowed, as open(2) does.
// Where the kernel has openat2(2) it resolves (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
// plus RESOLVE_NO_SYMLINKS for kRefuse). Elsewhere a walk opens one component at a time
// with O_NOFOLLOW relative to the directory before it, keeps the descriptors of the
// directories it went through (so ".." goes back to one of them and never past the
// root), and resolves symlinks itself under the same rules. Either way a task that swaps
// directories and symlinks while a path is resolved can make the open fail or land on
// another file beneath the root, never outside it.
//
// Callers then work on the descriptor only: fstat it, check its type, read with bounds.
// Every descriptor is opened close-on-exec and O_NOCTTY. Blocking file-system calls:
// run them on the blocking pool.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/unique_fd.h"

namespace drover::common {

enum class Links {
  kFollowBeneath,  // symlinks are followed while they stay beneath the root
  kRefuse,         // any symlink on the path fails the open
};

// Opens `rel` (relative; "" and "." are the root itself) beneath `root` with open(2)
// `flags` (and `mode` with O_CREAT). Errors name `rel`: NotFound for a missing
// component, PermissionDenied for an escape, a refused symlink or EACCES,
// FailedPrecondition when a component is not a directory, InvalidArgument for a path
// longer than PATH_MAX or with a NUL byte.
absl::StatusOr<UniqueFd> OpenBeneath(int root, std::string_view rel, int flags,
                                     Links links = Links::kFollowBeneath, mode_t mode = 0);

// Creates the missing directories of `rel` beneath `root` with `mode` (then chmod, so the
// umask does not narrow it), following no symlink, and opens the last one
// (O_RDONLY | O_DIRECTORY). A component that exists and is not a directory fails
// (FailedPrecondition).
absl::StatusOr<UniqueFd> MakeDirsBeneath(int root, std::string_view rel, mode_t mode);

// A directory entry with its own metadata (symlinks not followed).
struct DirEntry {
  std::string name;
  struct stat st {};
};
// The entries of the open directory `dir` (without "." and ".."), in directory order;
// with `keep`, only the names it keeps (others are neither stat'ed nor counted). More
// than `max_entries` fails (ResourceExhausted) rather than growing without bound.
// Entries removed while listing are left out.
absl::StatusOr<std::vector<DirEntry>> ReadDirAt(
    int dir, size_t max_entries, const std::function<bool(std::string_view)>& keep = nullptr);

// Up to `max_bytes` from `offset` of the open file `fd` (fewer at end of file).
absl::StatusOr<std::string> ReadAt(int fd, int64_t offset, size_t max_bytes);

// Opens `rel` beneath `root` for reading only if it is a regular file: never blocks on a
// FIFO or device (O_NONBLOCK), and anything else fails (FailedPrecondition, "not a
// regular file"). `st` receives its metadata.
absl::StatusOr<UniqueFd> OpenRegularBeneath(int root, std::string_view rel, struct stat* st,
                                            Links links = Links::kFollowBeneath);

// Reopens `path_fd` (an O_PATH descriptor, say) for reading if it is a regular file,
// through /proc/self/fd, which names exactly that file whatever happened to its path.
absl::StatusOr<UniqueFd> ReopenRegular(int path_fd);

// Removes `name` from the directory `parent` and, for a directory, everything below it,
// following no symlink and never descending into another file system (a mount point
// below fails the removal, naming it, and is left in place). Any depth works with a
// bounded number of descriptors. NotFound is not an error.
absl::Status RemoveTreeAt(int parent, std::string_view name);
// The same for a path the caller trusts up to its last component.
absl::Status RemoveTree(const std::filesystem::path& path);

// Opens a directory whose path the caller trusts (the data dir, an alloc dir it built),
// refusing a symlink as its last component.
absl::StatusOr<UniqueFd> OpenDirectory(const std::filesystem::path& path);

// An absl::Status for `err` with `what` as context, mapped as OpenBeneath documents.
absl::Status ErrnoStatus(int err, std::string_view what);

// Whether openat2(2) is used; tests force the component walk to cover both.
bool BeneathUsesOpenat2();
void ForceBeneathWalkForTesting(bool force);

}  // namespace drover::common
