#include "client/allocdir/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string_view>

#include "client/allocdir/tar.h"
#include "common/beneath.h"
#include "common/status_macros.h"

namespace drover::allocdir {

namespace {

using tar::AppendHeader;
using tar::Entry;
using tar::kMaxDepth;
using tar::LinkStaysInside;
using tar::PadFor;

// The header of an entry the walk found, with its metadata.
absl::Status Header(const std::string& name, char type, uint64_t size, const struct stat& st,
                    const std::string& link, std::string* out) {
  return AppendHeader(Entry{.name = name,
                            .type = type,
                            .mode = static_cast<uint32_t>(st.st_mode),
                            .uid = st.st_uid,
                            .gid = st.st_gid,
                            .size = size,
                            .mtime = st.st_mtime,
                            .link = link},
                      out);
}

struct Level {
  common::UniqueFd fd;
  DIR* stream = nullptr;  // owns a duplicate of fd
  std::string name;       // in the archive ("alloc/data/db")
};

}  // namespace

struct SnapshotStream::Impl {
  ~Impl() { CloseAll(); }

  void CloseAll() {
    for (Level& level : stack) {
      if (level.stream != nullptr)
        closedir(level.stream);
    }
    stack.clear();
    file.reset();
  }

  absl::Status Advance(std::string& out);
  absl::Status AddEntry(int dir, const std::string& name, const std::string& shown,
                        std::string& out);
  absl::Status CopyFile(std::string& out, size_t max_bytes);

  common::UniqueFd alloc;
  std::string alloc_id;
  std::vector<std::pair<std::string, std::string>> roots;  // (parent, name) in the alloc dir
  size_t next_root = 0;
  std::vector<Level> stack;
  common::UniqueFd file;  // the regular file whose data is being copied
  uint64_t file_size = 0;
  uint64_t file_left = 0;
  bool finished = false;
  // Bytes of file data the archive may carry (the allocation's ephemeral disk), and so
  // far; a file with more than one link is sent once, its other names as hard links.
  uint64_t max_data = 0;
  uint64_t data = 0;
  std::map<std::pair<dev_t, ino_t>, std::string> linked;
};

// Writes the next entry's header (opening its directory or file), or the end of the
// archive once every root is walked.
absl::Status SnapshotStream::Impl::Advance(std::string& out) {
  if (stack.empty()) {
    if (next_root == roots.size()) {
      out.append(1024, '\0');
      finished = true;
      return absl::OkStatus();
    }
    const auto& [parent, name] = roots[next_root++];
    // The alloc dir and the task dirs are the agent's; their entries are the tasks'.
    auto dir =
        common::OpenBeneath(alloc.get(), parent, O_RDONLY | O_DIRECTORY, common::Links::kRefuse);
    if (!dir.ok())
      return absl::IsNotFound(dir.status()) ? absl::OkStatus() : dir.status();
    return AddEntry(dir->get(), name, parent + "/" + name, out);
  }
  Level& top = stack.back();
  errno = 0;
  const dirent* e = readdir(top.stream);
  if (e == nullptr) {
    if (errno != 0)
      return common::ErrnoStatus(errno, "list '" + top.name + "'");
    closedir(top.stream);
    stack.pop_back();
    return absl::OkStatus();
  }
  const std::string name = e->d_name;
  if (name == "." || name == "..")
    return absl::OkStatus();
  return AddEntry(top.fd.get(), name, top.name + "/" + name, out);
}

absl::Status SnapshotStream::Impl::AddEntry(int dir, const std::string& name,
                                            const std::string& shown, std::string& out) {
  struct stat st {};
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? absl::OkStatus() : common::ErrnoStatus(errno, "stat '" + shown + "'");
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = readlinkat(dir, name.c_str(), target, sizeof target);
    if (n < 0)
      return errno == ENOENT ? absl::OkStatus()
                             : common::ErrnoStatus(errno, "readlink '" + shown + "'");
    const std::string link(target, static_cast<size_t>(n));
    if (!LinkStaysInside(shown, link))
      return absl::OkStatus();
    return Header(shown, '2', 0, st, link, &out);
  }
  // Directories and files are opened without following anything, then checked again
  // on the descriptor: the entry may have been swapped since the stat.
  if (S_ISDIR(st.st_mode)) {
    if (stack.size() >= kMaxDepth)
      return absl::InvalidArgumentError("'" + shown + "' is nested too deeply for the archive");
    common::UniqueFd fd(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid() || fstat(fd.get(), &st) != 0)
      return absl::OkStatus();  // gone, or no longer a directory
    DROVER_RETURN_IF_ERROR(Header(shown + "/", '5', 0, st, "", &out));
    const int copy = fcntl(fd.get(), F_DUPFD_CLOEXEC, 0);
    DIR* stream = copy < 0 ? nullptr : fdopendir(copy);
    if (stream == nullptr) {
      const int err = errno;
      if (copy >= 0)
        close(copy);
      return common::ErrnoStatus(err, "list '" + shown + "'");
    }
    stack.push_back(Level{std::move(fd), stream, shown});
    return absl::OkStatus();
  }
  if (!S_ISREG(st.st_mode))
    return absl::OkStatus();  // sockets, FIFOs, devices: nothing to migrate
  common::UniqueFd fd(
      openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return absl::OkStatus();
  if (st.st_nlink > 1) {
    auto [it, first] = linked.emplace(std::make_pair(st.st_dev, st.st_ino), shown);
    if (!first)
      return Header(shown, '1', 0, st, it->second, &out);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_data - std::min(data, max_data)) {
    return absl::ResourceExhaustedError(
        "the data to archive is larger than the allocation's ephemeral disk (" +
        std::to_string(max_data >> 20) + " MB)");
  }
  data += size;
  DROVER_RETURN_IF_ERROR(Header(shown, '0', size, st, "", &out));
  file = std::move(fd);
  file_size = size;
  file_left = size;
  return absl::OkStatus();
}

// Copies the current file's data: exactly the size its header gave (zeros where the
// file has shrunk since), then the padding.
absl::Status SnapshotStream::Impl::CopyFile(std::string& out, size_t max_bytes) {
  absl::Status status;
  while (file_left > 0 && out.size() < max_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(file_left, max_bytes - out.size()));
    const size_t at = out.size();
    out.resize(at + want);
    size_t got = 0;
    while (status.ok() && got < want) {
      const ssize_t n = read(file.get(), out.data() + at + got, want - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        status = common::ErrnoStatus(errno, "read");
      if (n <= 0)
        break;
      got += static_cast<size_t>(n);
    }
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(at + got), out.end(), '\0');
    file_left -= want;
    if (!status.ok()) {
      out.append(static_cast<size_t>(file_left), '\0');  // keep the archive well formed
      file_left = 0;
    }
  }
  if (file_left == 0) {
    out.append(PadFor(file_size), '\0');
    file.reset();
  }
  return status;
}

SnapshotStream::SnapshotStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SnapshotStream::~SnapshotStream() = default;

absl::StatusOr<std::unique_ptr<SnapshotStream>> SnapshotStream::Open(const AllocDir& dir,
                                                                     std::string alloc_id,
                                                                     std::vector<std::string> tasks,
                                                                     uint64_t max_data) {
  auto impl = std::make_unique<Impl>();
  impl->max_data = max_data;
  auto alloc = common::OpenDirectory(dir.dir());
  if (!alloc.ok())
    return absl::NotFoundError("allocation directory is gone");
  impl->alloc = std::move(*alloc);
  impl->alloc_id = std::move(alloc_id);
  impl->roots.emplace_back("alloc", "data");
  for (std::string& task : tasks) {
    if (AllocDir::ValidTaskName(task))
      impl->roots.emplace_back(std::move(task), "local");
  }
  return std::unique_ptr<SnapshotStream>(new SnapshotStream(std::move(impl)));
}

std::string SnapshotStream::Next(size_t max_bytes) {
  std::string out;
  Impl& s = *impl_;
  while (!s.finished && out.size() < max_bytes) {
    absl::Status step = s.file.valid() ? s.CopyFile(out, max_bytes) : s.Advance(out);
    if (step.ok())
      continue;
    status_ = step;
    s.CloseAll();
    const std::string msg(status_.message());
    // The receiver recognises this name and reports its content as the failure.
    (void)AppendHeader(Entry{.name = "NOMAD-" + s.alloc_id + "-ERROR.log",
                             .mode = 0666,
                             .size = msg.size(),
                             .mtime = 946684800},
                       &out);
    out.append(msg);
    out.append(PadFor(msg.size()), '\0');
    out.append(1024, '\0');
    s.finished = true;
  }
  return out;
}

}  // namespace drover::allocdir
