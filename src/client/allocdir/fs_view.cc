#include "client/allocdir/fs_view.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace drover::allocdir {

namespace fs = std::filesystem;

namespace {

std::string Relative(const std::string& path) {
  size_t start = 0;
  while (start < path.size() && path[start] == '/')
    ++start;
  return start == path.size() ? "." : path.substr(start);
}

std::string GoFileMode(mode_t m) {
  std::string s;
  if (S_ISDIR(m)) {
    s += 'd';
  } else if (S_ISLNK(m)) {
    s += 'L';
  } else if (S_ISFIFO(m)) {
    s += 'p';
  } else if (S_ISSOCK(m)) {
    s += 'S';
  }
  if (m & S_ISVTX)
    s += 't';
  if (s.empty())
    s = "-";
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    s += (m & (1u << (8 - i))) ? rwx[i] : '-';
  return s;
}

// http.DetectContentType's coarse answer: text when the first bytes are printable.
std::string SniffContentType(const fs::path& p) {
  if (p.extension() == ".json")
    return "application/json";
  std::ifstream in(p, std::ios::binary);
  char buf[512];
  in.read(buf, sizeof buf);
  const std::streamsize n = in.gcount();
  if (n == 0)
    return "text/plain; charset=utf-8";
  for (std::streamsize i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(buf[i]);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f')
      return "application/octet-stream";
  }
  return "text/plain; charset=utf-8";
}

absl::StatusOr<FileInfo> Info(const fs::path& full, std::string name) {
  struct stat st {};
  if (lstat(full.c_str(), &st) != 0) {
    return absl::NotFoundError("stat '" + name + "': " + std::strerror(errno));
  }
  FileInfo f;
  f.name = std::move(name);
  f.is_dir = S_ISDIR(st.st_mode);
  f.size = st.st_size;
  f.file_mode = GoFileMode(st.st_mode);
  f.mod_time_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (S_ISREG(st.st_mode))
    f.content_type = SniffContentType(full);
  return f;
}

// Whether `full` lies in some task's secrets/ or private/ dir.
bool Protected(const AllocDir& dir, const fs::path& full) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(dir.dir(), ec);
  const fs::path rel = full.lexically_relative(root);
  auto it = rel.begin();
  if (it == rel.end() || ++it == rel.end())
    return false;
  std::string second = it->string();
  std::transform(second.begin(), second.end(), second.begin(), ::tolower);
  return second == "secrets" || second == "private";
}

}  // namespace

absl::StatusOr<std::vector<FileInfo>> ListDir(const AllocDir& dir, const std::string& path) {
  auto full = dir.Resolve(Relative(path));
  if (!full.ok())
    return full.status();
  std::error_code ec;
  if (!fs::is_directory(*full, ec))
    return absl::InvalidArgumentError("\"" + path + "\" is not a directory");
  std::vector<FileInfo> out;
  for (const auto& entry : fs::directory_iterator(*full, ec)) {
    auto info = Info(entry.path(), entry.path().filename().string());
    if (info.ok())
      out.push_back(*std::move(info));
  }
  if (ec)
    return absl::InternalError("list '" + path + "': " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<FileInfo> StatPath(const AllocDir& dir, const std::string& path) {
  auto full = dir.Resolve(Relative(path));
  if (!full.ok())
    return full.status();
  const std::string rel = Relative(path);
  return Info(*full, rel == "." ? "/" : fs::path(rel).filename().string());
}

absl::StatusOr<std::string> ReadFileAt(const AllocDir& dir, const std::string& path, int64_t offset,
                                       int64_t limit) {
  auto full = dir.Resolve(Relative(path));
  if (!full.ok())
    return full.status();
  if (Protected(dir, *full))
    return absl::PermissionDeniedError("Reading secret file prohibited: " + path);
  std::error_code ec;
  if (fs::is_directory(*full, ec))
    return absl::InvalidArgumentError("\"" + path + "\" is a directory");
  if (offset < 0)
    return absl::InvalidArgumentError("offset must not be negative");
  std::ifstream in(*full, std::ios::binary);
  if (!in)
    return absl::NotFoundError("open '" + path + "': " + std::strerror(errno));
  in.seekg(offset);
  std::string out;
  if (limit < 0) {
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    out.resize(static_cast<size_t>(limit));
    in.read(out.data(), limit);
    out.resize(static_cast<size_t>(in.gcount()));
  }
  return out;
}

absl::StatusOr<std::vector<LogFile>> LogFiles(const AllocDir& dir, const std::string& task,
                                              const std::string& type) {
  if (!AllocDir::ValidTaskName(task))
    return absl::InvalidArgumentError("invalid task name \"" + task + "\"");
  if (type != "stdout" && type != "stderr")
    return absl::InvalidArgumentError("log type must be \"stdout\" or \"stderr\"");
  const std::string prefix = task + "." + type + ".";
  std::vector<LogFile> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.logs_dir(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_regular_file(ec))
      continue;
    const std::string idx = name.substr(prefix.size());
    if (idx.empty() || !std::all_of(idx.begin(), idx.end(), ::isdigit))
      continue;
    out.push_back({.rel_path = "alloc/logs/" + name,
                   .index = std::stoll(idx),
                   .size = static_cast<int64_t>(entry.file_size(ec))});
  }
  std::sort(out.begin(), out.end(),
            [](const LogFile& a, const LogFile& b) { return a.index < b.index; });
  return out;
}

}  // namespace drover::allocdir
