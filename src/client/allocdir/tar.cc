#include "client/allocdir/tar.h"

#include <algorithm>
#include <cstring>

namespace drover::allocdir::tar {

namespace {

// Writes `value` as zero-padded octal into a field of `width` bytes (NUL-terminated).
void Octal(char* field, size_t width, uint64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
}

// An id that fits a 7-digit octal field, else 0.
uint64_t Id(uint64_t id) {
  return id <= 07777777 ? id : 0;
}

// An octal field: leading spaces, digits, then NUL or spaces to its end.
std::optional<uint64_t> ParseOctal(std::string_view field) {
  size_t i = 0;
  while (i < field.size() && field[i] == ' ')
    ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < field.size() && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) {
    if (v > (UINT64_MAX >> 3))
      return std::nullopt;
    v = (v << 3) | static_cast<uint64_t>(field[i] - '0');
  }
  for (; i < field.size(); ++i) {
    if (field[i] != '\0' && field[i] != ' ')
      return std::nullopt;
  }
  if (digits == 0)
    return std::nullopt;
  return v;
}

// A NUL-terminated (or full-width) string field.
std::string Text(std::string_view field) {
  return std::string(field.substr(0, std::min(field.find('\0'), field.size())));
}

}  // namespace

absl::Status AppendHeader(const Entry& e, std::string* out) {
  char h[kBlock];
  std::memset(h, 0, sizeof h);
  std::string prefix;
  std::string base = e.name;
  if (e.name.size() > 100) {
    const size_t cut = e.name.rfind('/', 155);
    if (cut == std::string::npos || e.name.size() - cut - 1 > 100) {
      return absl::InvalidArgumentError("path too long for the archive: " + e.name);
    }
    prefix = e.name.substr(0, cut);
    base = e.name.substr(cut + 1);
  }
  if (e.size >= (uint64_t{1} << 33)) {
    return absl::InvalidArgumentError("file too large for the archive (8 GiB max): " + e.name);
  }
  if (e.link.size() > 100) {
    return absl::InvalidArgumentError("link target too long for the archive: " + e.link);
  }
  std::memcpy(h, base.data(), base.size());
  // No setuid or setgid bit: an archive extracted as root must not make a task's file a
  // root-owned setuid binary.
  Octal(h + 100, 8, e.mode & 01777);
  Octal(h + 108, 8, Id(e.uid));
  Octal(h + 116, 8, Id(e.gid));
  Octal(h + 124, 12, e.size);
  Octal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(e.mtime, 0)));
  std::memset(h + 148, ' ', 8);  // checksum is computed with this field as spaces
  h[156] = e.type;
  std::memcpy(h + 157, e.link.data(), e.link.size());
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

absl::StatusOr<std::optional<Entry>> ParseHeader(std::string_view block) {
  if (block.size() != kBlock)
    return absl::InvalidArgumentError("short tar header");
  if (std::all_of(block.begin(), block.end(), [](char c) { return c == '\0'; }))
    return std::nullopt;
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
  const auto stored = ParseOctal(block.substr(148, 8));
  if (!stored || *stored != sum)
    return absl::InvalidArgumentError("tar header checksum does not match");
  if (block.substr(257, 5) != "ustar")
    return absl::InvalidArgumentError("not a ustar archive");
  Entry e;
  const std::string prefix = Text(block.substr(345, 155));
  const std::string name = Text(block.substr(0, 100));
  e.name = prefix.empty() ? name : prefix + "/" + name;
  e.type = block[156] == '\0' ? '0' : block[156];
  if (e.type == '5') {
    while (!e.name.empty() && e.name.back() == '/')
      e.name.pop_back();
  }
  const auto mode = ParseOctal(block.substr(100, 8));
  const auto uid = ParseOctal(block.substr(108, 8));
  const auto gid = ParseOctal(block.substr(116, 8));
  const auto size = ParseOctal(block.substr(124, 12));
  const auto mtime = ParseOctal(block.substr(136, 12));
  if (!mode || !uid || !gid || !size || !mtime)
    return absl::InvalidArgumentError("tar header of '" + e.name + "' has a malformed field");
  e.mode = static_cast<uint32_t>(*mode & 01777);
  e.uid = static_cast<uid_t>(Id(*uid));
  e.gid = static_cast<gid_t>(Id(*gid));
  e.size = *size;
  e.mtime = static_cast<int64_t>(std::min<uint64_t>(*mtime, INT64_MAX));
  e.link = Text(block.substr(157, 100));
  return e;
}

bool LinkStaysInside(std::string_view entry, std::string_view target) {
  if (target.empty() || target.front() == '/')
    return false;
  int depth = static_cast<int>(std::count(entry.begin(), entry.end(), '/'));
  bool named = false;
  size_t start = 0;
  while (start <= target.size()) {
    size_t end = target.find('/', start);
    if (end == std::string_view::npos)
      end = target.size();
    const std::string_view part = target.substr(start, end - start);
    if (part == "..") {
      if (named || --depth < 0)
        return false;
    } else if (!part.empty() && part != ".") {
      named = true;
    }
    start = end + 1;
  }
  return true;
}

}  // namespace drover::allocdir::tar
