#include "client/allocdir/snapshot.h"

#include <sys/stat.h>

#include <cstring>
#include <fstream>

namespace drover::allocdir {

namespace fs = std::filesystem;

namespace {

// Writes `value` as zero-padded octal into a field of `width` bytes (NUL-terminated).
// Digits that do not fit are dropped (callers keep values in range: sizes < 8 GiB).
void Octal(char* field, size_t width, uint64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
}

// One ustar header. Names longer than 100 bytes are split into prefix/name at a '/'.
absl::Status Header(const std::string& name, char type, uint64_t size, uint32_t mode, int64_t mtime,
                    const std::string& link, std::string* out) {
  char h[512];
  std::memset(h, 0, sizeof h);
  std::string prefix, base = name;
  if (name.size() > 100) {
    const size_t cut = name.rfind('/', 155);
    if (cut == std::string::npos || name.size() - cut - 1 > 100) {
      return absl::InvalidArgumentError("path too long for the archive: " + name);
    }
    prefix = name.substr(0, cut);
    base = name.substr(cut + 1);
  }
  if (size >= (uint64_t{1} << 33)) {
    return absl::InvalidArgumentError("file too large for the archive (8 GiB max): " + name);
  }
  if (link.size() > 100) {
    return absl::InvalidArgumentError("symlink target too long for the archive: " + link);
  }
  std::memcpy(h, base.data(), base.size());
  Octal(h + 100, 8, mode & 07777);
  Octal(h + 108, 8, 0);  // uid
  Octal(h + 116, 8, 0);  // gid
  Octal(h + 124, 12, size);
  Octal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(mtime, 0)));
  std::memset(h + 148, ' ', 8);  // checksum is computed with this field as spaces
  h[156] = type;
  std::memcpy(h + 157, link.data(), link.size());
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memcpy(h + 345, prefix.data(), prefix.size());
  unsigned sum = 0;
  for (unsigned char c : h)
    sum += c;
  Octal(h + 148, 7, sum);  // six digits, NUL, then a space
  h[155] = ' ';
  out->append(h, sizeof h);
  return absl::OkStatus();
}

void Pad(std::string* out) {
  if (const size_t rem = out->size() % 512; rem != 0)
    out->append(512 - rem, '\0');
}

absl::Status AddEntry(const fs::path& root, const fs::path& full, std::string* out) {
  struct stat st {};
  if (lstat(full.c_str(), &st) != 0) {
    return absl::InternalError("stat '" + full.string() + "': " + std::strerror(errno));
  }
  const std::string name = full.lexically_relative(root).string();
  if (S_ISDIR(st.st_mode)) {
    return Header(name + "/", '5', 0, st.st_mode, st.st_mtime, "", out);
  }
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(full, ec);
    if (ec)
      return absl::InternalError("readlink '" + full.string() + "': " + ec.message());
    return Header(name, '2', 0, st.st_mode, st.st_mtime, target.string(), out);
  }
  if (!S_ISREG(st.st_mode))
    return absl::OkStatus();  // sockets, fifos: nothing to migrate
  std::ifstream in(full, std::ios::binary);
  if (!in)
    return absl::InternalError("open '" + full.string() + "': " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (absl::Status s = Header(name, '0', data.size(), st.st_mode, st.st_mtime, "", out); !s.ok())
    return s;
  out->append(data);
  Pad(out);
  return absl::OkStatus();
}

absl::Status AddTree(const fs::path& root, const fs::path& dir, std::string* out) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return absl::OkStatus();
  if (absl::Status s = AddEntry(root, dir, out); !s.ok())
    return s;
  // Symlinks are stored, never followed: a link cannot pull outside files in.
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (absl::Status s = AddEntry(root, it->path(), out); !s.ok())
      return s;
  }
  if (ec)
    return absl::InternalError("walk '" + dir.string() + "': " + ec.message());
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSnapshot(const AllocDir& dir, const std::string& alloc_id,
                           const std::vector<std::string>& tasks, std::string* out) {
  absl::Status status = AddTree(dir.dir(), dir.data_dir(), out);
  for (const std::string& task : tasks) {
    if (!status.ok())
      break;
    status = AddTree(dir.dir(), dir.task_dir(task).local, out);
  }
  if (!status.ok()) {
    const std::string msg(status.message());
    // The receiver recognises this name and reports its content as the failure.
    (void)Header("NOMAD-" + alloc_id + "-ERROR.log", '0', msg.size(), 0666, 946684800, "", out);
    out->append(msg);
    Pad(out);
  }
  out->append(1024, '\0');
  return status;
}

}  // namespace drover::allocdir
