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
  bool journal_of_this_boot = true;
  if (absl::Status s = t.Replay(journal_of_this_boot); !s.ok())
    return s;
  same_boot = same_boot && journal_of_this_boot;
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

absl::Status TaskTable::Replay(bool& this_boot) {
  std::ifstream in(journal_file_);
  std::string line;
  if (!in || !std::getline(in, line) || in.eof())
    return absl::OkStatus();  // empty (or only a header cut short): nothing to replay
  // The header says which boot wrote the journal; one of an earlier boot (left by a
  // crash between folding and emptying it) describes tasks that are dead, and damage
  // in it is that machine crash's.
  Json header = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object() || !header.contains("boot_id")) {
    return absl::DataLossError("task journal '" + journal_file_.string() +
                               "' line 1: no boot_id header");
  }
  this_boot = header["boot_id"] == boot_id_;
  int number = 1;
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
      if (!this_boot)
        return absl::OkStatus();
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
  // After a failed append or fold the journal's end is unknown: the table starts over.
  if (dirty_ || journal_bytes_ + line.size() > std::max<size_t>(64 << 10, 2 * table_bytes_))
    return Save();  // the table holds the change
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = write(journal_.get(), line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int e = errno;
      // What reached the file is a partial line: cut it off, or (failing that) have
      // the whole table replace the journal, now or at the next change.
      if (ftruncate(journal_.get(), static_cast<off_t>(journal_bytes_)) != 0)
        dirty_ = true;
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
  dirty_ = true;  // until the journal is empty again and has its header
  if (ftruncate(journal_.get(), 0) != 0)
    return absl::InternalError("truncate '" + journal_file_.string() +
                               "': " + std::strerror(errno));
  journal_bytes_ = 0;
  const std::string header = Json{{"boot_id", boot_id_}}.dump() + "\n";
  if (write(journal_.get(), header.data(), header.size()) != static_cast<ssize_t>(header.size()))
    return absl::InternalError("write '" + journal_file_.string() + "': " + std::strerror(errno));
  journal_bytes_ = header.size();
  dirty_ = false;
  return absl::OkStatus();
}

}  // namespace drover::supervisor
