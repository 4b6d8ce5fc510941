#include "supervisor/task_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace drover::supervisor {

namespace fs = std::filesystem;

namespace {

absl::Status WriteAllAndSync(const fs::path& path, const std::string& data) {
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
  if (fsync(fd) != 0) {
    const int e = errno;
    close(fd);
    return absl::InternalError("fsync '" + path.string() + "': " + std::strerror(e));
  }
  close(fd);
  return absl::OkStatus();
}

void SyncDir(const fs::path& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
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
  std::ifstream in(t.file_);
  if (!in)
    return t;  // first start
  std::stringstream ss;
  ss << in.rdbuf();
  Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tasks") || !j["tasks"].is_array()) {
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
  const Json doc = {{"version", 1}, {"tasks", arr}};
  const fs::path tmp = file_.string() + ".tmp";
  if (absl::Status s = WriteAllAndSync(tmp, doc.dump()); !s.ok())
    return s;
  std::error_code ec;
  fs::rename(tmp, file_, ec);
  if (ec) {
    return absl::InternalError("rename '" + tmp.string() + "': " + ec.message());
  }
  SyncDir(file_.parent_path());
  return absl::OkStatus();
}

}  // namespace drover::supervisor
