// The isolated task's view of the world (protocol.h IsolationSpec): what the
// supervisor prepares on the host before it clones the task, and what the task's
// process does in its new namespaces before it execs.
//
// The task's root is a directory the task itself (and, between runs, anything running
// as its user) can write. So nothing below the root is touched by path: the mount
// points are made and opened with common/beneath.h (no symlink followed), each mount
// goes onto a descriptor opened just before it (/proc/self/fd/N), /dev is filled relative to the
// descriptor of the tmpfs mounted on it, and the chroot is into the root's descriptor.
// A task that swapped a mount point for a symlink between two runs makes the next
// start fail; it can never make root create, mount or chmod anything outside its root.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "common/unique_fd.h"
#include "supervisor/protocol.h"

namespace drover::supervisor {

// Everything the child needs, opened and formatted before the clone: between clone and
// exec only async-signal-safe calls are made, so nothing may be allocated there. The
// root's descriptor closes with the plan in the supervisor, and at exec in the task.
// Mount points are opened in the child, just before each mount, with openat2
// (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) or, without it, a no-follow component walk
// (OpenMountPointInChild), so a bind nested in an earlier one is found through it.
struct IsolationPlan {
  struct Mount {
    std::string source;
    std::string target;  // relative to the root
    bool readonly = true;
  };
  struct Node {
    std::string path;  // relative to the task's /dev
    unsigned major = 0;
    unsigned minor = 0;
    bool block = false;    // a block device (else a character device)
    unsigned mode = 0666;  // from the device's permissions: r and w for everyone or none
  };
  // The root, opened (and identified) on the host. The child opens it again by path in
  // its new mount namespace (what it mounts must be found there, not through a
  // descriptor of the host's namespace) and checks it is the same directory.
  common::UniqueFd root;
  std::string root_path;
  dev_t root_dev = 0;
  ino_t root_ino = 0;
  std::vector<Mount> binds;
  std::vector<Node> nodes;
  std::vector<std::string> dev_dirs;  // made under /dev before the nodes (relative)
  std::vector<std::pair<std::string, std::string>> links;  // in /dev: name -> target
};

// Checks the spec, opens the root and creates the mount points beneath it (directories,
// or empty files for file binds). A missing bind source is skipped, as Nomad skips
// chroot_env entries the host does not have; a device node that is missing or not a
// device is an error (the task must not start without the devices it was given), and
// so is a mount point that is not what it must be (a symlink, a FIFO).
absl::StatusOr<IsolationPlan> PrepareIsolation(const IsolationSpec& spec);

// In the child, after clone(CLONE_NEWNS | CLONE_NEWPID | ...): makes the mount tree
// private, mounts the binds, /proc and /dev, and chroots into the root (cwd "/").
// Returns nullptr on success, else the step that failed (errno is set).
const char* EnterIsolation(const IsolationPlan& plan);

// In the child (async-signal-safe): opens `rel` (relative, no "." or ".." parts; ""
// is `root` itself) beneath `root` with O_PATH, through mounts, following no symlink.
// openat2 where the kernel has it and `walk` is false, else one component at a time.
// The descriptor, or -1 with errno.
int OpenMountPointInChild(int root, const char* rel, bool walk);

// Whether the absolute path `inside` of the task's root names an executable, checked
// on the host before the task starts (through the binds, or beneath the root without
// leaving it). kUnknown where the host cannot tell without following a link the task
// made (an absolute symlink inside the root): exec reports the truth then.
enum class InsideCheck { kExecutable, kNotExecutable, kMissing, kUnknown };
InsideCheck CheckInside(const IsolationSpec& spec, const std::string& inside);

}  // namespace drover::supervisor
