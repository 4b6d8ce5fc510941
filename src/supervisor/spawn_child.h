// The child's side of SpawnProcess (process.cc): what it is given, prepared before the
// clone, and what it does from the clone to execve. Internal to the supervisor library.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "supervisor/hardening.h"
#include "supervisor/isolation.h"
#include "supervisor/protocol.h"

namespace drover::supervisor {

struct Credentials {
  bool change = false;
  bool change_group = false;  // a group was named (alone or with the user)
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  std::vector<gid_t> groups;  // supplementary groups, looked up before the clone
};

// Everything the child needs, prepared before the clone: the child allocates nothing.
struct ChildPlan {
  const SpawnSpec* spec = nullptr;
  std::string path;  // what to execve
  Credentials creds;
  std::vector<std::pair<int, rlimit>> limits;
  std::optional<IsolationPlan> isolation;
  const Hardening* hardening = nullptr;
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
  int stdout_fd = -1;
  int stderr_fd = -1;
  const std::vector<int>* cgroup_fds = nullptr;
  // The child waits for a byte on it before anything else: until then the parent can
  // read its identity (pid, start time) knowing that it has not exited. The child
  // closes the write end first, so that a parent that gives up makes it see EOF.
  int go_fd = -1;
  int go_write_fd = -1;
  // go's write end as the parent numbers it: with a shared table the child's private
  // copy may hold it too (when it is below the slots' end), and must close both.
  int go_write_original = -1;
  // Nonzero when the child shares our descriptor table: it unshares everything below
  // this before anything else, then says so with a byte on the report pipe (until then
  // the parent must not open or close a descriptor).
  int shared_table_end = 0;
  // The report pipe's write end, as the child numbers it.
  int report = -1;
};

// Whether a child for `c` may share the parent's memory (CLONE_VM): its steps are then
// all made through raw system calls, which write no errno and allocate nothing. Tasks
// with isolation or hardening go through libc calls (mounts, seccomp) and are forked.
// So is every task while the caller's oom_score_adj is not 0 (a supervisor that could
// lower its own to -1000): the child's reset of the task's to 0 would reach the
// caller's too, which Linux keeps equal across processes sharing memory.
bool MayShareMemory(const ChildPlan& c);

// The child, from the clone to execve. Reports a failed step on `c.report` and exits
// 127. With CLONE_VM it runs on its own stack but the parent's memory: see
// MayShareMemory.
[[noreturn]] void RunChild(const ChildPlan& c);

// clone()'s entry point for a child with its own stack: `arg` is the ChildPlan.
int RunChildEntry(void* arg);

}  // namespace drover::supervisor
