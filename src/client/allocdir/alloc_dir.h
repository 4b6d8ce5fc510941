// The on-disk layout of one allocation (reference §8.1):
//
//   <alloc root>/<alloc id>/
//     alloc/{data,logs,tmp}          shared by the group's tasks (NOMAD_ALLOC_DIR)
//     <task>/{local,tmp,secrets,private}   per task (NOMAD_TASK_DIR = local)
//
// Paths are immutable after construction; Build*/Destroy are idempotent and may run
// on the blocking pool. Safe for concurrent use (the set of built task dirs is guarded).
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "common/unique_fd.h"

namespace drover::allocdir {

struct TaskDir {
  std::filesystem::path dir;    // <alloc>/<task>
  std::filesystem::path local;  // NOMAD_TASK_DIR
  std::filesystem::path tmp;
  std::filesystem::path secrets;   // NOMAD_SECRETS_DIR
  std::filesystem::path private_;  // never served by the fs API
};

// Who owns a task's directories: the user its driver runs it as, when that is not the
// agent's own user.
struct DirOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The owner for a task that runs as `user`: nullopt when the agent cannot or need not
// give the directories away (no user named, the agent's own user, or an agent that is
// not root). NotFound for an unknown user.
absl::StatusOr<std::optional<DirOwner>> OwnerFor(const std::string& user);

struct AllocDirOptions {
  // Mount a tmpfs on each task's secrets/ (noexec; `secrets_mb`) and private/ (1 MB), so
  // secrets never reach the disk. Needs root; the client turns it on when it has it.
  bool mount_tmpfs = false;
  int secrets_mb = 1;
};

// Where an allocation's directory is: a copyable handle for work on the pool, which
// may outlive the allocation's runner (reads then fail as the files are gone).
struct AllocDirLocation {
  std::filesystem::path alloc_root;
  std::string alloc_id;
};

class AllocDir {
 public:
  AllocDir(std::filesystem::path alloc_root, std::string alloc_id, AllocDirOptions options = {});
  explicit AllocDir(const AllocDirLocation& location)
      : AllocDir(location.alloc_root, location.alloc_id) {}

  std::filesystem::path dir() const { return dir_; }
  AllocDirLocation location() const { return {dir().parent_path(), dir().filename().string()}; }
  std::filesystem::path shared_dir() const { return dir() / "alloc"; }
  std::filesystem::path data_dir() const { return dir() / "alloc" / "data"; }
  std::filesystem::path logs_dir() const { return dir() / "alloc" / "logs"; }
  TaskDir task_dir(const std::string& task) const;

  // Creates the alloc dir (0711) and the shared alloc/ (0755) with data/ (0777) and
  // tmp/ (1777), which the group's tasks share whatever users they run as, and logs/
  // (0755: only the agent's supervisor writes logs). Existing dirs get these modes.
  absl::Status Build();
  // Creates <task>/{local,tmp,secrets,private}, mounting the tmpfs dirs if asked to
  // and not mounted yet (so a rebuild after a node reboot mounts them again). The task
  // dir, local/ (0755), tmp/ (1777) and secrets/ (0700) belong to `owner` when given;
  // private/ is the agent's (0700). `open_to_all`: local/ and secrets/ are 0777 instead,
  // for a task whose user is its image's (docker), unknown to the host, as Nomad gives
  // them. Nothing a task left in the tree is followed.
  // REQUIRES: Build() succeeded.
  absl::StatusOr<TaskDir> BuildTaskDir(const std::string& task,
                                       const std::optional<DirOwner>& owner = std::nullopt,
                                       bool open_to_all = false);
  bool TaskDirBuilt(const std::string& task) const;
  // Unmounts everything mounted below the alloc dir (whoever mounted it, e.g. before
  // an agent restart), then removes the whole tree. Errors name the path.
  absl::Status Destroy();

  // Takes over another (stopped) alloc dir's ephemeral data (reference §7):
  // <from>/alloc/data and, for each of `tasks`, <from>/<task>/local are renamed into
  // this dir, replacing empty targets. Nothing else moves (logs, tmp, secrets). A
  // missing source, or one a task replaced with anything but a directory, is skipped.
  // Renames, so both dirs must be on one filesystem.
  // REQUIRES: Build() succeeded.
  absl::Status Move(const std::filesystem::path& from, const std::vector<std::string>& tasks);

  // Whether `name` is a usable task name (non-empty, no '/', not "." / ".." / "alloc").
  static bool ValidTaskName(const std::string& name);

 private:
  // Opens the alloc dir, creating it with its mode if missing.
  absl::StatusOr<common::UniqueFd> OpenOrCreate() const;

  // A string, not a path: a path also keeps a list of its components (~500 bytes, and
  // a node holds an AllocDir per allocation).
  const std::string dir_;
  const AllocDirOptions options_;
  // A std::mutex rather than absl::Mutex: the distribution's absl is not built for
  // ThreadSanitizer, which then cannot see its locking.
  mutable std::mutex mu_;
  bool built_ = false;               // guarded by mu_
  std::set<std::string> task_dirs_;  // guarded by mu_
};

}  // namespace drover::allocdir
