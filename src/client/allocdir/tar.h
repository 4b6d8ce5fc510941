// The parts of POSIX ustar that snapshots use (snapshot.h writes them,
// snapshot_extract.h reads them): 512-byte headers with octal fields, names up to 255
// bytes split into prefix/name at a '/', file data padded to whole blocks, and two zero
// blocks at the end. Types: '0' file, '1' hard link, '2' symlink, '5' directory.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace drover::allocdir::tar {

inline constexpr size_t kBlock = 512;

// Directory levels below an archived root (alloc/data or <task>/local): the sender
// walks no deeper, and the receiver accepts no deeper.
inline constexpr size_t kMaxDepth = 32;

struct Entry {
  std::string name;  // prefix joined to name; a directory's trailing '/' removed
  char type = '0';
  uint32_t mode = 0;  // permission bits only (setuid and setgid never kept)
  uid_t uid = 0;
  gid_t gid = 0;
  uint64_t size = 0;
  int64_t mtime = 0;
  std::string link;  // a symlink's target, or a hard link's first name
};

// Appends the header of `e` (mode masked to 01777). InvalidArgument when a name or
// target does not fit ustar, or the size passes 8 GiB. Ids that do not fit are sent as 0.
absl::Status AppendHeader(const Entry& e, std::string* out);

// Parses one header block. nullopt for an all-zero block (the end of the archive);
// InvalidArgument for a bad checksum, a field that is not octal, or a block that is not
// ustar.
absl::StatusOr<std::optional<Entry>> ParseHeader(std::string_view block);

// The zero bytes that fill `size` bytes of data up to a whole block.
inline size_t PadFor(uint64_t size) {
  return static_cast<size_t>((kBlock - size % kBlock) % kBlock);
}

// Whether the symlink `target`, stored at `entry` (a name in the archive), stays inside
// the archived tree: relative, climbing (with leading "..") no higher than the alloc dir,
// and never climbing after a name. The leading ".." climb real directories; a ".." after
// a name could climb from wherever another link in the archive leads (`y -> .`,
// `x -> y/y/../..`). Both sides check it: the sender leaves such links out, the receiver
// refuses them.
bool LinkStaysInside(std::string_view entry, std::string_view target);

}  // namespace drover::allocdir::tar
