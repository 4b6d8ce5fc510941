#include "client/allocdir/fs_view.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/beneath.h"

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
std::string SniffContentType(const std::string& name, int fd) {
  if (fs::path(name).extension() == ".json")
    return "application/json";
  auto head = common::ReadAt(fd, 0, 512);
  if (!head.ok())
    return "application/octet-stream";
  for (const char ch : *head) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f')
      return "application/octet-stream";
  }
  return "text/plain; charset=utf-8";
}

FileInfo InfoOf(std::string name, const struct stat& st) {
  FileInfo f;
  f.name = std::move(name);
  f.is_dir = S_ISDIR(st.st_mode);
  f.size = st.st_size;
  f.file_mode = GoFileMode(st.st_mode);
  f.mod_time_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return f;
}

// Where the open `fd` is now, relative to the alloc dir `root` ("" for the root itself);
// PermissionDenied if it is not beneath it.
absl::StatusOr<std::string> WhereBeneath(int root, int fd) {
  std::error_code ec;
  const std::string base = fs::read_symlink("/proc/self/fd/" + std::to_string(root), ec).string();
  const std::string at = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec).string();
  if (ec || base.empty())
    return absl::InternalError("cannot tell where an opened file is: " + ec.message());
  if (at == base)
    return std::string();
  if (!at.starts_with(base + "/"))
    return absl::PermissionDeniedError("path escapes the alloc dir");
  return at.substr(base.size() + 1);
}

// Whether `rel` (relative to the alloc dir) lies in some task's secrets/ or private/.
bool Protected(std::string_view rel) {
  const size_t first = rel.find('/');
  if (first == std::string_view::npos)
    return false;
  std::string second(rel.substr(first + 1, rel.find('/', first + 1) - first - 1));
  std::transform(second.begin(), second.end(), second.begin(), ::tolower);
  return second == "secrets" || second == "private";
}

// The user's view of an error: what is not a regular file or not a directory is a bad
// request, as is a directory too large to list.
absl::Status ForUser(const absl::Status& s, const std::string& path) {
  if (absl::IsFailedPrecondition(s) || absl::IsResourceExhausted(s))
    return absl::InvalidArgumentError("\"" + path + "\": " + std::string(s.message()));
  return s;
}

struct Opened {
  common::UniqueFd root;
  common::UniqueFd fd;
  struct stat st {};
};

// Opens the alloc dir, then `path` beneath it with `flags`.
absl::StatusOr<Opened> OpenInAlloc(const AllocDir& dir, const std::string& path, int flags) {
  Opened o;
  auto root = common::OpenDirectory(dir.dir());
  if (!root.ok())
    return absl::NotFoundError("allocation directory is gone");
  o.root = std::move(*root);
  const std::string rel = Relative(path);
  auto fd = common::OpenBeneath(o.root.get(), rel, flags);
  if (!fd.ok()) {
    if (absl::IsNotFound(fd.status()))
      return absl::NotFoundError("path '" + rel + "' does not exist");
    if (absl::IsPermissionDenied(fd.status()))
      return absl::PermissionDeniedError("path '" + rel + "' escapes the alloc dir");
    return ForUser(fd.status(), path);
  }
  o.fd = std::move(*fd);
  if (fstat(o.fd.get(), &o.st) != 0)
    return common::ErrnoStatus(errno, "stat '" + path + "'");
  return o;
}

}  // namespace

absl::StatusOr<std::vector<FileInfo>> ListDir(const AllocDir& dir, const std::string& path) {
  auto o = OpenInAlloc(dir, path, O_RDONLY | O_NONBLOCK);
  if (!o.ok())
    return o.status();
  if (!S_ISDIR(o->st.st_mode))
    return absl::InvalidArgumentError("\"" + path + "\" is not a directory");
  auto where = WhereBeneath(o->root.get(), o->fd.get());
  if (!where.ok())
    return where.status();
  // Contents are never read in a protected directory, not even to sniff their type.
  const bool sniff = !Protected(*where + "/");
  auto entries = common::ReadDirAt(o->fd.get(), kMaxListEntries);
  if (!entries.ok())
    return ForUser(entries.status(), path);
  std::vector<FileInfo> out;
  out.reserve(entries->size());
  for (const common::DirEntry& e : *entries) {
    FileInfo info = InfoOf(e.name, e.st);
    if (S_ISREG(e.st.st_mode)) {
      auto file = common::OpenBeneath(o->fd.get(), e.name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
      struct stat st {};
      info.content_type = sniff && file.ok() && fstat(file->get(), &st) == 0 && S_ISREG(st.st_mode)
                              ? SniffContentType(e.name, file->get())
                              : "application/octet-stream";
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.name < b.name; });
  return out;
}

absl::StatusOr<FileInfo> StatPath(const AllocDir& dir, const std::string& path) {
  auto o = OpenInAlloc(dir, path, O_PATH);
  if (!o.ok())
    return o.status();
  const std::string rel = Relative(path);
  FileInfo info = InfoOf(rel == "." ? "/" : fs::path(rel).filename().string(), o->st);
  if (S_ISREG(o->st.st_mode)) {
    auto where = WhereBeneath(o->root.get(), o->fd.get());
    auto file = common::ReopenRegular(o->fd.get());
    info.content_type = where.ok() && !Protected(*where) && file.ok()
                            ? SniffContentType(info.name, file->get())
                            : "application/octet-stream";
  }
  return info;
}

absl::StatusOr<std::string> ReadFileAt(const AllocDir& dir, const std::string& path, int64_t offset,
                                       int64_t limit) {
  if (offset < 0)
    return absl::InvalidArgumentError("offset must not be negative");
  if (limit > kMaxReadBytes) {
    return absl::InvalidArgumentError("limit must be at most " + std::to_string(kMaxReadBytes) +
                                      " bytes");
  }
  auto o = OpenInAlloc(dir, path, O_RDONLY | O_NONBLOCK);
  if (!o.ok())
    return o.status();
  if (S_ISDIR(o->st.st_mode))
    return absl::InvalidArgumentError("\"" + path + "\" is a directory");
  if (!S_ISREG(o->st.st_mode))
    return absl::InvalidArgumentError("\"" + path + "\" is not a regular file");
  auto where = WhereBeneath(o->root.get(), o->fd.get());
  if (!where.ok())
    return where.status();
  if (Protected(*where))
    return absl::PermissionDeniedError("Reading secret file prohibited: " + path);
  if (limit < 0) {
    if (o->st.st_size > kMaxReadBytes) {
      return absl::InvalidArgumentError("\"" + path + "\" is larger than " +
                                        std::to_string(kMaxReadBytes) + " bytes: read it in parts");
    }
    limit = kMaxReadBytes;
  }
  // Never more than the file holds: a huge limit on a small file allocates nothing.
  const int64_t left = std::max<int64_t>(o->st.st_size - offset, 0);
  return common::ReadAt(o->fd.get(), offset, static_cast<size_t>(std::min(limit, left)));
}

absl::StatusOr<std::vector<LogFile>> LogFiles(const AllocDir& dir, const std::string& task,
                                              const std::string& type) {
  if (!AllocDir::ValidTaskName(task))
    return absl::InvalidArgumentError("invalid task name \"" + task + "\"");
  if (type != "stdout" && type != "stderr")
    return absl::InvalidArgumentError("log type must be \"stdout\" or \"stderr\"");
  const std::string prefix = task + "." + type + ".";
  std::vector<LogFile> out;
  auto o = OpenInAlloc(dir, "alloc/logs", O_RDONLY | O_DIRECTORY);
  if (!o.ok())
    return absl::IsNotFound(o.status()) ? absl::StatusOr<std::vector<LogFile>>(out) : o.status();
  // The directory holds every task's logs (and whatever tasks put there): only this
  // log's files count against the limit.
  auto entries = common::ReadDirAt(o->fd.get(), kMaxListEntries,
                                   [&](std::string_view name) { return name.starts_with(prefix); });
  if (!entries.ok())
    return ForUser(entries.status(), "alloc/logs");
  for (const common::DirEntry& e : *entries) {
    if (!e.name.starts_with(prefix) || !S_ISREG(e.st.st_mode))
      continue;
    const std::string idx = e.name.substr(prefix.size());
    if (idx.empty() || idx.size() > 18 || !std::all_of(idx.begin(), idx.end(), ::isdigit))
      continue;
    out.push_back({.rel_path = "alloc/logs/" + e.name,
                   .index = std::stoll(idx),
                   .size = static_cast<int64_t>(e.st.st_size)});
  }
  std::sort(out.begin(), out.end(),
            [](const LogFile& a, const LogFile& b) { return a.index < b.index; });
  return out;
}

}  // namespace drover::allocdir
