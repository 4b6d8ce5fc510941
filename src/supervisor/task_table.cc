#include "supervisor/task_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace drover::supervisor {

namespace fs = std::filesystem;

namespace {

absl::Status WriteAll(const fs::path& path, const std::string& data) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return absl::InternalError("open '" + path.string() + "': " + std::strerror(errno));
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::InternalError("write '" + path.string() + "': " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  close(fd);
  return absl::OkStatus();
}

std::string ReadBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// When this boot began, from /proc/uptime.
std::filesystem::file_time_type BootTime() {
  std::ifstream in("/proc/uptime");
  double up = 0;
  in >> up;
  return std::filesystem::file_time_type::clock::now() -
         std::chrono::duration_cast<std::filesystem::file_time_type::duration>(
             std::chrono::duration<double>(up));
}

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<TaskTable> TaskTable::Open(const fs::path& state_dir) {
  std::error_code ec;
  fs::create_directories(state_dir, ec);
  if (ec) {
    return absl::InternalError("failed to create state dir '" + state_dir.string() +
                               "': " + ec.message());
  }
  fs::permissions(state_dir, fs::perms::owner_all, ec);
  TaskTable t(state_dir / "tasks.json");
  t.boot_id_ = ReadBootId();
  std::ifstream in(t.file_);
  if (!in)
    return t;  // first start
  std::stringstream ss;
  ss << in.rdbuf();
  Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tasks") || !j["tasks"].is_array()) {
    // Written without fsync (see Save): after a machine crash the file may be torn. Its
    // tasks died with that boot, so nothing is lost; within this boot it is a real
    // problem.
    std::error_code ec;
    if (fs::last_write_time(t.file_, ec) < BootTime() && !ec)
      return t;
    return absl::DataLossError("task table '" + t.file_.string() + "' is unreadable");
  }
  for (const Json& tj : j["tasks"]) {
    auto task = TaskInfoFromJson(tj);
    if (!task.ok()) {
      return absl::DataLossError("task table '" + t.file_.string() +
                                 "': " + std::string(task.status().message()));
    }
    t.tasks_[task->task_id] = *task;
  }
  // Tasks of an earlier boot are dead, whatever process has their pid and start time
  // now (both restart from zero at boot).
  if (j.value("boot_id", std::string()) != t.boot_id_) {
    for (auto& [id, task] : t.tasks_) {
      if (task.running) {
        task.running = false;
        task.exit = ExitStatus{.unknown = true, .time_ns = NowNanos()};
      }
    }
    if (absl::Status saved = t.Save(); !saved.ok())
      return saved;
  }
  return t;
}

const TaskInfo* TaskTable::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : &it->second;
}

absl::Status TaskTable::Put(const TaskInfo& task) {
  tasks_[task.task_id] = task;
  return Save();
}

absl::Status TaskTable::Remove(const std::string& task_id) {
  if (tasks_.erase(task_id) == 0)
    return absl::OkStatus();
  return Save();
}

absl::Status TaskTable::Save() {
  Json arr = Json::array();
  for (const auto& [id, t] : tasks_)
    arr.push_back(ToJson(t));
  const Json doc = {{"version", 1}, {"boot_id", boot_id_}, {"tasks", arr}};
  // Atomic against a crash of this process (write aside, rename over): the page cache
  // outlives the process. Not synced to disk: only a machine crash could lose the
  // write, and that kills every task it describes (Open handles what it leaves).
  const fs::path tmp = file_.string() + ".tmp";
  if (absl::Status s = WriteAll(tmp, doc.dump()); !s.ok())
    return s;
  std::error_code ec;
  fs::rename(tmp, file_, ec);
  if (ec) {
    return absl::InternalError("rename '" + tmp.string() + "': " + ec.message());
  }
  return absl::OkStatus();
}

}  // namespace drover::supervisor
