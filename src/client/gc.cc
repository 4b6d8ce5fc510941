#include "client/gc.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace drover::client {

absl::StatusOr<DiskUsage> StatDisk(const std::filesystem::path& path) {
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0) {
    return absl::InternalError("statvfs '" + path.string() + "': " + std::strerror(errno));
  }
  DiskUsage u;
  if (st.f_blocks > 0) {
    u.used_percent =
        100.0 * static_cast<double>(st.f_blocks - st.f_bfree) / static_cast<double>(st.f_blocks);
  }
  if (st.f_files > 0) {
    u.inodes_used_percent =
        100.0 * static_cast<double>(st.f_files - st.f_ffree) / static_cast<double>(st.f_files);
  }
  return u;
}

void GcQueue::MarkTerminal(const std::string& id, common::Time when) {
  if (since_.contains(id))
    return;
  since_[id] = when;
  order_.insert({when, id});
}

void GcQueue::Remove(const std::string& id) {
  auto it = since_.find(id);
  if (it == since_.end())
    return;
  order_.erase({it->second, id});
  since_.erase(it);
}

std::optional<std::string> GcQueue::PopOldest(
    const std::function<bool(const std::string&)>& eligible) {
  for (const auto& [when, id] : order_) {
    if (eligible && !eligible(id))
      continue;
    std::string out = id;
    Remove(out);
    return out;
  }
  return std::nullopt;
}

}  // namespace drover::client
