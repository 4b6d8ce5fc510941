#include "client/allocdir/follow_reader.h"

#include <algorithm>

namespace drover::allocdir {

FollowReader::FollowReader(const AllocDirLocation& dir, FollowTarget target)
    : dir_(dir), target_(std::move(target)) {}

int64_t FollowReader::NextChunkSize() const {
  return target_.limit < 0 ? kChunkBytes : std::min(kChunkBytes, target_.limit - read_);
}

absl::StatusOr<FollowChunk> FollowReader::Next() {
  return target_.task.empty() ? NextOfFile() : NextOfLog();
}

absl::StatusOr<FollowChunk> FollowReader::ReadFrom(const std::string& rel_path) {
  auto data = ReadFileAt(dir_, rel_path, offset_, NextChunkSize());
  if (!data.ok())
    return data.status();
  offset_ += static_cast<int64_t>(data->size());
  read_ += static_cast<int64_t>(data->size());
  return FollowChunk{*std::move(data), rel_path, offset_};
}

absl::StatusOr<FollowChunk> FollowReader::NextOfFile() {
  if (rel_path_.empty()) {
    auto info = StatPath(dir_, target_.path);
    if (!info.ok())
      return info.status();
    rel_path_ = target_.path;
    offset_ = target_.from_end ? std::max<int64_t>(info->size - target_.offset, 0) : target_.offset;
  }
  return ReadFrom(rel_path_);
}

absl::StatusOr<FollowChunk> FollowReader::NextOfLog() {
  auto files = LogFiles(dir_, target_.task, target_.type);
  if (!files.ok())
    return files.status();
  if (index_ < 0) {
    // First read: place the position `offset` bytes from the start or end of the whole
    // log.
    int64_t total = 0;
    for (const auto& f : *files)
      total += f.size;
    int64_t skip = target_.from_end ? std::max<int64_t>(total - target_.offset, 0) : target_.offset;
    for (const auto& f : *files) {
      rel_path_ = f.rel_path;
      index_ = f.index;
      offset_ = std::min(skip, f.size);
      if (skip <= f.size)
        break;
      skip -= f.size;
    }
    if (index_ < 0)
      return FollowChunk{};  // no file yet
  }
  for (const auto& f : *files) {
    if (f.index < index_)
      continue;
    if (f.index > index_) {
      // The current file was exhausted or purged: go on with the next one (the limit
      // counts across files).
      rel_path_ = f.rel_path;
      index_ = f.index;
      offset_ = 0;
    }
    auto chunk = ReadFrom(rel_path_);
    if (!chunk.ok() || !chunk->data.empty())
      return chunk;
  }
  return FollowChunk{};
}

absl::StatusOr<int64_t> LogSize(const AllocDir& dir, const std::string& task,
                                const std::string& type) {
  auto files = LogFiles(dir, task, type);
  if (!files.ok())
    return files.status();
  int64_t total = 0;
  for (const auto& f : *files)
    total += f.size;
  return total;
}

absl::StatusOr<FileInfo> StatReadable(const AllocDir& dir, const std::string& path) {
  auto info = StatPath(dir, path);
  if (info.ok() && !info->is_dir) {
    if (absl::Status readable = ReadFileAt(dir, path, 0, 0).status(); !readable.ok())
      return readable;
  }
  return info;
}

}  // namespace drover::allocdir
