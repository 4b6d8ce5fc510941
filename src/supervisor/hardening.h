// What an isolated (exec) task may not do, applied in its process just before exec
// (docs/security.md, "What an exec task cannot do"):
//   - PR_SET_NO_NEW_PRIVS: no setuid binary or file capability raises its privileges;
//   - a capability bounding set reduced to Nomad's exec defaults (hardening.cc), and
//     no ambient or inheritable capabilities;
//   - a seccomp filter that refuses (EPERM) the obvious escapes: loading kernel modules
//     or kernels, mounting, pivot_root, ptrace and cross-process memory access, keyrings,
//     bpf, perf events, userfaultfd, handle-based opens ("shocker"), io_uring (whose
//     operations no filter sees), new namespaces and joining others, swap, reboot,
//     accounting and quotas. Every syscall ABI of the machine (on x86-64 also i386 and
//     x32) is filtered, so a 32-bit call does not slip past.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "absl/status/statusor.h"

namespace drover::supervisor {

struct Hardening {
  std::vector<sock_filter> seccomp;  // the compiled filter program
  std::vector<int> drop_caps;        // capabilities to remove from the bounding set
};

// Builds the filter (with libseccomp) and the capability list. Allocates: call before
// fork/clone. The result is the same for every task; callers may keep it.
absl::StatusOr<Hardening> PrepareHardening();

// In the child, after its mounts and before it drops its user: removes the
// capabilities and sets no_new_privs. Async-signal-safe. nullptr, or the failed step.
const char* RestrictPrivileges(const Hardening& h);
// In the child, right before execve: loads the seccomp filter (which refuses mount, so
// it must come after the isolation is set up). Async-signal-safe.
const char* LoadSeccomp(const Hardening& h);

}  // namespace drover::supervisor
