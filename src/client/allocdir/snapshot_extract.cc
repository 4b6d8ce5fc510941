#include "client/allocdir/snapshot_extract.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <set>

#include "absl/strings/str_split.h"

#include "client/allocdir/tar.h"
#include "common/beneath.h"
#include "common/status_macros.h"

namespace drover::allocdir {

namespace {

// What an entry counts against the ephemeral disk besides its data.
constexpr uint64_t kEntryCost = 4096;

// The most of the sender's error file that is kept for the error message.
constexpr size_t kMaxErrorText = 64 * 1024;

// Writes all of `data` to `fd`.
absl::Status WriteAll(int fd, std::string_view data, const std::string& name) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return common::ErrnoStatus(errno, "write '" + name + "'");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// "a/b/c" → ("a/b", "c").
std::pair<std::string, std::string> SplitLast(const std::string& path) {
  const size_t slash = path.rfind('/');
  return {path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

struct SnapshotExtractor::Impl {
  enum class Phase { kHeader, kData, kEnded };
  enum class Where { kWrite, kSkip };

  absl::Status Feed(std::string_view bytes);
  absl::Status Begin();
  absl::Status EndEntry();
  absl::StatusOr<Where> Classify(const std::string& name) const;
  absl::StatusOr<common::UniqueFd> Parent(const std::string& name) const;
  absl::Status CreateFile(const std::string& name);
  absl::Status Link(const tar::Entry& e);
  void Own(int fd) const;

  common::UniqueFd root;
  std::string error_name;  // NOMAD-<prev>-ERROR.log
  std::set<std::string, std::less<>> tasks;
  uint64_t max_data = 0;
  uint64_t data = 0;
  size_t entries = 0;
  bool as_root = false;
  absl::Status status;

  Phase phase = Phase::kHeader;
  std::string header;
  tar::Entry entry;
  uint64_t left = 0;  // data of the current entry still to come
  size_t pad = 0;     // then this much padding
  common::UniqueFd out;
  bool skip = false;
  bool error_file = false;
  std::optional<std::string> error_text;
  std::set<std::string> files;  // regular files written: hard links may name them
};

absl::StatusOr<SnapshotExtractor::Impl::Where> SnapshotExtractor::Impl::Classify(
    const std::string& name) const {
  std::vector<std::string> parts = absl::StrSplit(name, '/');
  for (const std::string& p : parts) {
    if (p.empty() || p == "." || p == "..")
      return absl::PermissionDeniedError("archive entry '" + name +
                                         "' is not a plain relative path");
  }
  if (parts.size() > 2 + tar::kMaxDepth + 1)
    return absl::InvalidArgumentError("archive entry '" + name + "' is nested too deeply");
  if (parts.size() >= 2 && parts[0] == "alloc" && parts[1] == "data")
    return Where::kWrite;
  if (parts.size() >= 2 && parts[1] == "local" && AllocDir::ValidTaskName(parts[0]))
    return tasks.contains(parts[0]) ? Where::kWrite : Where::kSkip;
  return absl::PermissionDeniedError("archive entry '" + name +
                                     "' is outside alloc/data and the tasks' local/ directories");
}

// Opens (creating as needed) the directory that holds `name`, following no symlink.
absl::StatusOr<common::UniqueFd> SnapshotExtractor::Impl::Parent(const std::string& name) const {
  return common::MakeDirsBeneath(root.get(), SplitLast(name).first, 0755);
}

void SnapshotExtractor::Impl::Own(int fd) const {
  if (as_root)
    (void)fchown(fd, entry.uid, entry.gid);
}

absl::Status SnapshotExtractor::Impl::CreateFile(const std::string& name) {
  DROVER_ASSIGN_OR_RETURN(common::UniqueFd parent, Parent(name));
  const std::string base = SplitLast(name).second;
  for (int attempt = 0; attempt < 2; ++attempt) {
    out = common::UniqueFd(openat(parent.get(), base.c_str(),
                                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                                  0600));
    if (out.valid())
      return absl::OkStatus();
    if (errno != EEXIST)
      break;
    // A name sent twice: the later entry wins, as tar does, unless it is a directory.
    if (unlinkat(parent.get(), base.c_str(), 0) != 0)
      break;
  }
  return common::ErrnoStatus(errno, "create '" + name + "'");
}

absl::Status SnapshotExtractor::Impl::Link(const tar::Entry& e) {
  DROVER_ASSIGN_OR_RETURN(common::UniqueFd parent, Parent(e.name));
  const std::string base = SplitLast(e.name).second;
  if (e.type == '2') {
    if (!tar::LinkStaysInside(e.name, e.link))
      return absl::PermissionDeniedError("archive symlink '" + e.name + "' -> '" + e.link +
                                         "' leaves the allocation directory");
    if (symlinkat(e.link.c_str(), parent.get(), base.c_str()) != 0)
      return common::ErrnoStatus(errno, "symlink '" + e.name + "'");
    if (as_root)
      (void)fchownat(parent.get(), base.c_str(), e.uid, e.gid, AT_SYMLINK_NOFOLLOW);
    return absl::OkStatus();
  }
  // A hard link: to a regular file this archive wrote, never to anything else.
  if (!files.contains(e.link))
    return absl::PermissionDeniedError("archive hard link '" + e.name + "' names '" + e.link +
                                       "', which the archive did not create");
  DROVER_ASSIGN_OR_RETURN(common::UniqueFd from, Parent(e.link));
  const std::string from_base = SplitLast(e.link).second;
  if (linkat(from.get(), from_base.c_str(), parent.get(), base.c_str(), 0) != 0)
    return common::ErrnoStatus(errno, "link '" + e.name + "'");
  files.insert(e.name);
  return absl::OkStatus();
}

// The header block is complete: checks the entry and starts it.
absl::Status SnapshotExtractor::Impl::Begin() {
  DROVER_ASSIGN_OR_RETURN(std::optional<tar::Entry> parsed, tar::ParseHeader(header));
  header.clear();
  if (!parsed) {
    phase = Phase::kEnded;
    return absl::OkStatus();
  }
  if (++entries > kMaxEntries)
    return absl::ResourceExhaustedError("the archive has more than " + std::to_string(kMaxEntries) +
                                        " entries");
  // Each entry costs the disk (an inode, a name) and this extraction (its name kept for
  // hard links) whatever its data: it counts as kEntryCost bytes of the disk.
  if (kEntryCost > max_data - std::min(data, max_data))
    return absl::ResourceExhaustedError(
        "the archive holds more than the allocation's ephemeral disk (" +
        std::to_string(max_data >> 20) + " MB; each entry counts " + std::to_string(kEntryCost) +
        " bytes)");
  data += kEntryCost;
  entry = std::move(*parsed);
  phase = Phase::kData;
  left = entry.type == '0' ? entry.size : 0;
  pad = tar::PadFor(left);
  skip = false;
  error_file = false;
  if (entry.type != '0' && entry.size != 0)
    return absl::InvalidArgumentError("archive entry '" + entry.name + "' of type '" +
                                      std::string(1, entry.type) + "' carries data");
  if (entry.type == '0' && entry.name == error_name) {
    error_file = true;
    error_text.emplace();
    return absl::OkStatus();
  }
  DROVER_ASSIGN_OR_RETURN(Where where, Classify(entry.name));
  if (where == Where::kSkip) {
    skip = true;
    return absl::OkStatus();
  }
  switch (entry.type) {
    case '0':
      if (entry.size > max_data - std::min(data, max_data))
        return absl::ResourceExhaustedError(
            "the archive holds more data than the allocation's ephemeral disk (" +
            std::to_string(max_data >> 20) + " MB)");
      data += entry.size;
      return CreateFile(entry.name);
    case '5': {
      DROVER_ASSIGN_OR_RETURN(common::UniqueFd dir,
                              common::MakeDirsBeneath(root.get(), entry.name, 0755));
      // alloc/data and <task>/local keep the modes and owners the alloc dir gives them.
      if (std::count(entry.name.begin(), entry.name.end(), '/') == 1)
        return absl::OkStatus();
      if (fchmod(dir.get(), entry.mode & 01777) != 0)
        return common::ErrnoStatus(errno, "chmod '" + entry.name + "'");
      Own(dir.get());
      return absl::OkStatus();
    }
    case '1':
    case '2':
      return Link(entry);
    default:
      return absl::InvalidArgumentError("archive entry '" + entry.name + "' has type '" +
                                        std::string(1, entry.type) +
                                        "', which a snapshot never holds");
  }
}

absl::Status SnapshotExtractor::Impl::EndEntry() {
  phase = Phase::kHeader;
  if (!out.valid())
    return absl::OkStatus();
  common::UniqueFd fd = std::move(out);
  if (fchmod(fd.get(), entry.mode & 0777) != 0)
    return common::ErrnoStatus(errno, "chmod '" + entry.name + "'");
  Own(fd.get());
  const timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
                             {.tv_sec = static_cast<time_t>(entry.mtime), .tv_nsec = 0}};
  (void)futimens(fd.get(), times);
  files.insert(entry.name);
  return absl::OkStatus();
}

absl::Status SnapshotExtractor::Impl::Feed(std::string_view bytes) {
  while (!bytes.empty() && phase != Phase::kEnded) {
    if (phase == Phase::kHeader) {
      const size_t n = std::min(tar::kBlock - header.size(), bytes.size());
      header.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      if (header.size() == tar::kBlock)
        DROVER_RETURN_IF_ERROR(Begin());
    } else if (left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, bytes.size()));
      const std::string_view piece = bytes.substr(0, n);
      if (error_file) {
        error_text->append(
            piece.substr(0, kMaxErrorText - std::min(kMaxErrorText, error_text->size())));
      } else if (out.valid()) {
        DROVER_RETURN_IF_ERROR(WriteAll(out.get(), piece, entry.name));
      }
      bytes.remove_prefix(n);
      left -= n;
    } else {
      const size_t n = std::min(pad, bytes.size());
      bytes.remove_prefix(n);
      pad -= n;
    }
    if (phase == Phase::kData && left == 0 && pad == 0)
      DROVER_RETURN_IF_ERROR(EndEntry());
  }
  return absl::OkStatus();
}

SnapshotExtractor::SnapshotExtractor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SnapshotExtractor::~SnapshotExtractor() = default;

absl::StatusOr<std::unique_ptr<SnapshotExtractor>> SnapshotExtractor::Open(
    const AllocDir& dest, std::string prev_alloc_id, std::vector<std::string> tasks,
    uint64_t max_data) {
  auto impl = std::make_unique<Impl>();
  DROVER_ASSIGN_OR_RETURN(impl->root, common::OpenDirectory(dest.dir()));
  impl->error_name = "NOMAD-" + prev_alloc_id + "-ERROR.log";
  for (std::string& t : tasks)
    impl->tasks.insert(std::move(t));
  impl->max_data = max_data;
  impl->as_root = geteuid() == 0;
  return std::unique_ptr<SnapshotExtractor>(new SnapshotExtractor(std::move(impl)));
}

absl::Status SnapshotExtractor::Feed(std::string_view bytes) {
  if (impl_->status.ok())
    impl_->status = impl_->Feed(bytes);
  return impl_->status;
}

absl::Status SnapshotExtractor::Finish() {
  Impl& s = *impl_;
  s.out.reset();
  if (!s.status.ok())
    return s.status;
  if (s.error_text)
    return absl::DataLossError("the previous node could not send all of the data: " +
                               *s.error_text);
  if (s.phase != Impl::Phase::kEnded)
    return absl::DataLossError("the archive ended early");
  return absl::OkStatus();
}

uint64_t SnapshotExtractor::data_bytes() const {
  return impl_->data;
}
size_t SnapshotExtractor::entries() const {
  return impl_->entries;
}

}  // namespace drover::allocdir
