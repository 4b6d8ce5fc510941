// The isolated task's view of the world (protocol.h IsolationSpec): what the
// supervisor prepares on the host before it clones the task, and what the task's
// process does in its new namespaces before it execs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "supervisor/protocol.h"

namespace drover::supervisor {

// Everything the child needs, as plain strings built before the clone: between clone
// and exec only async-signal-safe calls are made, so nothing may be allocated there.
struct IsolationPlan {
  struct Mount {
    std::string source;
    std::string target;  // host path under the root (the mount point)
    bool readonly = true;
  };
  struct Node {
    std::string path;
    unsigned major = 0;
    unsigned minor = 0;
    bool block = false;    // a block device (else a character device)
    unsigned mode = 0666;  // from the device's permissions: r and w for everyone or none
  };
  std::string root;
  std::vector<Mount> binds;
  std::string proc;     // <root>/proc
  std::string dev;      // <root>/dev
  std::string dev_shm;  // <root>/dev/shm
  std::vector<Node> nodes;
  std::vector<std::string> dev_dirs;  // directories made under /dev before the nodes
  std::vector<std::pair<std::string, std::string>> links;  // link path -> target
};

// Checks the spec and creates the mount points under the root (directories, or empty
// files for file binds). A missing bind source is skipped, as Nomad skips chroot_env
// entries the host does not have; a device node that is missing or not a device is an
// error (the task must not start without the devices it was given).
absl::StatusOr<IsolationPlan> PrepareIsolation(const IsolationSpec& spec);

// In the child, after clone(CLONE_NEWNS | CLONE_NEWPID | ...): makes the mount tree
// private, mounts the binds, /proc and /dev, and chroots into the root (cwd "/").
// Returns nullptr on success, else the step that failed (errno is set).
const char* EnterIsolation(const IsolationPlan& plan);

// Where an absolute path inside the task's root is on the host (through the binds),
// so the supervisor can check a command before it starts the task.
std::string HostPathOf(const IsolationSpec& spec, const std::string& inside);

}  // namespace drover::supervisor
