#include "supervisor/hardening.h"

#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace drover::supervisor {

namespace {

// Refused with EPERM for every exec task.
constexpr const char* kDeniedSyscalls[] = {"kexec_load",
                                           "kexec_file_load",
                                           "init_module",
                                           "finit_module",
                                           "delete_module",
                                           "mount",
                                           "umount",
                                           "umount2",
                                           "pivot_root",
                                           "fsopen",
                                           "fsconfig",
                                           "fsmount",
                                           "fspick",
                                           "move_mount",
                                           "open_tree",
                                           "mount_setattr",
                                           "swapon",
                                           "swapoff",
                                           "reboot",
                                           "keyctl",
                                           "add_key",
                                           "request_key",
                                           "bpf",
                                           "ptrace",
                                           "process_vm_readv",
                                           "process_vm_writev",
                                           "perf_event_open",
                                           "userfaultfd",
                                           "open_by_handle_at",
                                           "name_to_handle_at",
                                           "unshare",
                                           "setns",
                                           "acct",
                                           "quotactl",
                                           "lookup_dcookie",
                                           "syslog",
                                           "iopl",
                                           "ioperm",
                                           "vhangup",
                                           "nfsservctl",
                                           "uselib",
                                           "io_uring_setup",
                                           "io_uring_enter",
                                           "io_uring_register"};

struct CapName {
  const char* name;
  int cap;
};
constexpr CapName kCapNames[] = {{"audit_write", CAP_AUDIT_WRITE},
                                 {"chown", CAP_CHOWN},
                                 {"dac_override", CAP_DAC_OVERRIDE},
                                 {"fowner", CAP_FOWNER},
                                 {"fsetid", CAP_FSETID},
                                 {"kill", CAP_KILL},
                                 {"mknod", CAP_MKNOD},
                                 {"net_bind_service", CAP_NET_BIND_SERVICE},
                                 {"setfcap", CAP_SETFCAP},
                                 {"setgid", CAP_SETGID},
                                 {"setpcap", CAP_SETPCAP},
                                 {"setuid", CAP_SETUID},
                                 {"sys_chroot", CAP_SYS_CHROOT}};

bool Allowed(int cap) {
  for (const CapName& c : kCapNames) {
    if (c.cap == cap)
      return true;
  }
  return false;
}

absl::Status SeccompError(int rc, const std::string& what) {
  return absl::InternalError("seccomp: " + what + ": " + std::strerror(-rc));
}

// Compiles the deny list into a BPF program.
absl::StatusOr<std::vector<sock_filter>> CompileFilter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr)
    return absl::InternalError("seccomp: cannot create a filter");
  struct Release {
    scmp_filter_ctx ctx;
    ~Release() { seccomp_release(ctx); }
  } release{ctx};
  if (seccomp_arch_native() == SCMP_ARCH_X86_64) {
    for (uint32_t arch : {SCMP_ARCH_X86, SCMP_ARCH_X32}) {
      const int rc = seccomp_arch_add(ctx, arch);
      if (rc != 0 && rc != -EEXIST)
        return SeccompError(rc, "add architecture");
    }
  }
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kDeniedSyscalls) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
      continue;  // not a syscall here
    const int rc = seccomp_rule_add(ctx, deny, nr, 0);
    if (rc != 0 && rc != -EDOM)  // -EDOM: not on one of the architectures
      return SeccompError(rc, std::string("deny ") + name);
  }
  // New namespaces of any kind: clone with a CLONE_NEW* flag; clone3, whose flags a
  // filter cannot read, answers ENOSYS so that libc falls back to clone.
  int rc = 0;
  for (uint64_t flag : {uint64_t{CLONE_NEWNS}, uint64_t{CLONE_NEWUTS}, uint64_t{CLONE_NEWIPC},
                        uint64_t{CLONE_NEWUSER}, uint64_t{CLONE_NEWPID}, uint64_t{CLONE_NEWNET},
                        uint64_t{CLONE_NEWCGROUP}}) {
    rc = seccomp_rule_add(ctx, deny, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc != 0 && rc != -EDOM && rc != -EEXIST)
      return SeccompError(rc, "deny clone with new namespaces");
  }
  if (const int nr = seccomp_syscall_resolve_name("clone3"); nr != __NR_SCMP_ERROR) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
    if (rc != 0 && rc != -EDOM)
      return SeccompError(rc, "answer clone3 with ENOSYS");
  }
  // The program goes through a memory file: libseccomp 2.5 exports to a descriptor.
  const int fd = memfd_create("drover-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    return absl::InternalError(std::string("seccomp: memfd_create: ") + std::strerror(errno));
  rc = seccomp_export_bpf(ctx, fd);
  if (rc != 0) {
    close(fd);
    return SeccompError(rc, "export");
  }
  const off_t size = lseek(fd, 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    close(fd);
    return absl::InternalError("seccomp: the exported program has a bad size");
  }
  std::vector<sock_filter> program(static_cast<size_t>(size) / sizeof(sock_filter));
  const ssize_t n = pread(fd, program.data(), static_cast<size_t>(size), 0);
  close(fd);
  if (n != size)
    return absl::InternalError("seccomp: cannot read the exported program");
  return program;
}

}  // namespace

absl::StatusOr<Hardening> PrepareHardening() {
  Hardening h;
  auto program = CompileFilter();
  if (!program.ok())
    return program.status();
  h.seccomp = *std::move(program);
  for (int cap = 0; cap <= 63; ++cap) {
    if (!Allowed(cap))
      h.drop_caps.push_back(cap);
  }
  return h;
}

const char* RestrictPrivileges(const Hardening& h) {
  for (int cap : h.drop_caps) {
    // EINVAL: past the kernel's last capability.
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return "drop capabilities";
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return "clear ambient capabilities";
  // Nor inheritable ones (carried across exec for files that ask for them).
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0)
    return "read capabilities";
  data[0].inheritable = 0;
  data[1].inheritable = 0;
  if (syscall(SYS_capset, &header, data) != 0)
    return "clear inheritable capabilities";
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return "set no_new_privs";
  return nullptr;
}

const char* LoadSeccomp(const Hardening& h) {
  if (h.seccomp.empty())
    return nullptr;
  sock_fprog prog{};
  prog.len = static_cast<unsigned short>(h.seccomp.size());
  prog.filter = const_cast<sock_filter*>(h.seccomp.data());
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
    return "load seccomp filter";
  return nullptr;
}

}  // namespace drover::supervisor
