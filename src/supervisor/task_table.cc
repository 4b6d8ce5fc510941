#include "supervisor/task_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

bool WrittenBeforeThisBoot(const fs::path& file) {
  std::error_code ec;
  const auto written = fs::last_write_time(file, ec);
  return !ec && written < BootTime();
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
  TaskTable t(state_dir);
  t.boot_id_ = ReadBootId();
  bool same_boot = true;
  if (std::ifstream in(t.file_); in) {
    std::stringstream ss;
    ss << in.rdbuf();
    t.table_bytes_ = ss.str().size();
    Json j = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("tasks") || !j["tasks"].is_array()) {
      // Torn by a machine crash: its tasks died with that boot, so nothing is lost;
      // within this boot it is a real problem.
      if (!WrittenBeforeThisBoot(t.file_))
        return absl::DataLossError("task table '" + t.file_.string() + "' is unreadable");
      same_boot = false;
    } else {
      for (const Json& tj : j["tasks"]) {
        auto task = TaskInfoFromJson(tj);
        if (!task.ok()) {
          return absl::DataLossError("task table '" + t.file_.string() +
                                     "': " + std::string(task.status().message()));
        }
        t.tasks_[task->task_id] = *task;
      }
      same_boot = j.value("boot_id", std::string()) == t.boot_id_;
    }
  }
  const bool stale_journal = WrittenBeforeThisBoot(t.journal_file_);
  if (absl::Status s = t.Replay(stale_journal); !s.ok())
    return s;
  same_boot = same_boot && !stale_journal;
  // Tasks of an earlier boot are dead, whatever process has their pid and start time
  // now (both restart from zero at boot).
  if (!same_boot) {
    for (auto& [id, task] : t.tasks_) {
      if (task.running) {
        task.running = false;
        task.exit = ExitStatus{.unknown = true, .time_ns = NowNanos()};
      }
    }
  }
  // One table of this boot, an empty journal, and the journal open for appending.
  if (absl::Status saved = t.Save(); !saved.ok())
    return saved;
  return t;
}

absl::Status TaskTable::Replay(bool stale) {
  std::ifstream in(journal_file_);
  if (!in)
    return absl::OkStatus();
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    // A line without its newline (the last) was being written when the process died.
    if (in.eof())
      break;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    absl::Status bad;
    if (j.is_discarded() || !j.is_object()) {
      bad = absl::DataLossError("not JSON");
    } else if (j.contains("put")) {
      auto task = TaskInfoFromJson(j["put"]);
      if (task.ok())
        tasks_[task->task_id] = *task;
      else
        bad = task.status();
    } else if (j.contains("remove") && j["remove"].is_string()) {
      tasks_.erase(j["remove"].get<std::string>());
    } else {
      bad = absl::DataLossError("neither put nor remove");
    }
    if (!bad.ok()) {
      if (stale)
        return absl::OkStatus();  // torn by a machine crash: that boot's tasks are dead
      return absl::DataLossError("task journal '" + journal_file_.string() + "' line " +
                                 std::to_string(number) + ": " + std::string(bad.message()));
    }
  }
  return absl::OkStatus();
}

const TaskInfo* TaskTable::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : &it->second;
}

absl::Status TaskTable::Put(const TaskInfo& task) {
  tasks_[task.task_id] = task;
  return Append(Json{{"put", ToJson(task)}}.dump() + "\n");
}

absl::Status TaskTable::Remove(const std::string& task_id) {
  if (tasks_.erase(task_id) == 0)
    return absl::OkStatus();
  return Append(Json{{"remove", task_id}}.dump() + "\n");
}

absl::Status TaskTable::Append(const std::string& line) {
  if (journal_bytes_ + line.size() > std::max<size_t>(64 << 10, 2 * table_bytes_))
    return Save();  // the table holds the change
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = write(journal_.get(), line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int e = errno;
      // What reached the file is a partial line: the whole table replaces it.
      if (absl::Status s = Save(); s.ok())
        return s;
      return absl::InternalError("append to '" + journal_file_.string() + "': " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  journal_bytes_ += line.size();
  return absl::OkStatus();
}

absl::Status TaskTable::Save() {
  Json arr = Json::array();
  for (const auto& [id, t] : tasks_)
    arr.push_back(ToJson(t));
  const Json doc = {{"version", 1}, {"boot_id", boot_id_}, {"tasks", arr}};
  const std::string data = doc.dump();
  // Atomic against a crash of this process (write aside, rename over): the page cache
  // outlives the process. Not synced to disk: only a machine crash could lose the
  // write, and that kills every task it describes (Open handles what it leaves).
  const fs::path tmp = file_.string() + ".tmp";
  if (absl::Status s = WriteAll(tmp, data); !s.ok())
    return s;
  std::error_code ec;
  fs::rename(tmp, file_, ec);
  if (ec) {
    return absl::InternalError("rename '" + tmp.string() + "': " + ec.message());
  }
  table_bytes_ = data.size();
  // The table holds everything the journal said: empty it. A crash before this
  // replays the journal over the new table, which changes nothing.
  if (!journal_.valid()) {
    journal_.reset(open(journal_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    if (!journal_.valid())
      return absl::InternalError("open '" + journal_file_.string() + "': " + std::strerror(errno));
  }
  if (ftruncate(journal_.get(), 0) != 0)
    return absl::InternalError("truncate '" + journal_file_.string() +
                               "': " + std::strerror(errno));
  journal_bytes_ = 0;
  return absl::OkStatus();
}

}  // namespace drover::supervisor
