#include "state/record_encoding.h"

#include <zstd.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace drover::state {

namespace {

// Records above this size are stored zstd-compressed as {"Zstd": <frame>} (an
// allocation's MessagePack shrinks several times, and a record of more than a page
// costs two LMDB overflow pages per write). Smaller ones stay plain: compressing them
// saves no page. Plain records (all of schema version 1) decode as before.
constexpr size_t kCompressAbove = 1024;
constexpr int kZstdLevel = 1;
constexpr char kCompressedField[] = "Zstd";
// A frame claiming more than this is damage, not a record.
constexpr unsigned long long kMaxRecordBytes = 64ull << 20;

// MessagePack's header for a map of one entry (fixmap, size 1).
constexpr char kOneEntryMap = '\x81';

// {key: <value's MessagePack>}, as nlohmann's to_msgpack writes that object, without
// copying the value into a wrapper object first.
std::string WrapMsgpack(const char* key, const std::vector<uint8_t>& value) {
  const std::vector<uint8_t> name = codec::Json::to_msgpack(codec::Json(key));
  std::string out;
  out.reserve(1 + name.size() + value.size());
  out += kOneEntryMap;
  out.append(name.begin(), name.end());
  out.append(value.begin(), value.end());
  return out;
}

// One compression context per thread, reused: creating one per record cost as much as
// compressing a small record.
ZSTD_CCtx* ThreadCompressor() {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> ctx(ZSTD_createCCtx(),
                                                                      &ZSTD_freeCCtx);
  return ctx.get();
}

// `plain` as stored: compressed as {"Zstd": <frame>} when that pays.
std::string Finish(std::string plain) {
  ZSTD_CCtx* ctx = plain.size() > kCompressAbove ? ThreadCompressor() : nullptr;
  if (ctx != nullptr) {
    // Deterministic for given bytes (fixed level, a context reset per frame), so dedup
    // still works.
    std::vector<uint8_t> frame(ZSTD_compressBound(plain.size()));
    const size_t n =
        ZSTD_compressCCtx(ctx, frame.data(), frame.size(), plain.data(), plain.size(), kZstdLevel);
    if (!ZSTD_isError(n) && n + 16 < plain.size()) {
      frame.resize(n);
      return WrapMsgpack(kCompressedField,
                         codec::Json::to_msgpack(codec::Json::binary(std::move(frame))));
    }
  }
  return plain;
}

// MessagePack of a map's size, as nlohmann writes it.
void AppendMapHeader(size_t n, std::vector<uint8_t>& out) {
  if (n <= 15) {
    out.push_back(static_cast<uint8_t>(0x80 | n));
  } else if (n <= 0xffff) {
    out.insert(out.end(), {0xde, static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
  } else {
    out.insert(out.end(), {0xdf, static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16),
                           static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
  }
}

void AppendMsgpack(const codec::Json& j, std::vector<uint8_t>& out) {
  codec::Json::to_msgpack(j, nlohmann::detail::output_adapter<uint8_t>(out));
}

// The MessagePack of the last few jobs' JSON, per thread. An entry is valid while its
// job lives: no other job can have its address until then. A gone job's bytes are
// dropped at the next lookup, not kept until the entry is reused.
class JobBytesCache {
 public:
  const std::vector<uint8_t>& Get(const std::shared_ptr<const model::Job>& job) {
    for (Entry& e : entries_) {
      if (e.owner.expired()) {
        e = Entry{};
        continue;
      }
      if (e.raw == job.get())
        return e.bytes;
    }
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % entries_.size();
    e.owner = job;
    e.raw = job.get();
    e.bytes = codec::Json::to_msgpack(codec::ToJson(*job));
    return e.bytes;
  }

 private:
  struct Entry {
    std::weak_ptr<const model::Job> owner;
    const model::Job* raw = nullptr;
    std::vector<uint8_t> bytes;
  };
  std::array<Entry, 4> entries_;
  size_t next_ = 0;
};

}  // namespace

std::string Encode(const char* field, const codec::Json& value) {
  // nlohmann's objects are std::maps: keys come out sorted, so the bytes are canonical.
  return Finish(WrapMsgpack(field, codec::Json::to_msgpack(value)));
}

std::string EncodeAllocation(const char* field, const model::Allocation& alloc) {
  if (!alloc.job)
    return Encode(field, codec::ToJson(alloc));
  thread_local JobBytesCache cache;
  const std::vector<uint8_t>& job = cache.Get(alloc.job);
  const codec::Json rest = codec::AllocJsonWithoutJob(alloc);
  // The object's entries in key order, as to_msgpack writes a std::map, with "Job"
  // among them.
  constexpr std::string_view kJobKey = "Job";
  std::vector<uint8_t> body;
  body.reserve(job.size() + 2048);
  AppendMapHeader(rest.size() + 1, body);
  bool job_written = false;
  auto write_job = [&] {
    AppendMsgpack(codec::Json(kJobKey), body);
    body.insert(body.end(), job.begin(), job.end());
    job_written = true;
  };
  for (const auto& [key, value] : rest.get_ref<const codec::Json::object_t&>()) {
    if (!job_written && std::string_view(key) > kJobKey)
      write_job();
    AppendMsgpack(codec::Json(key), body);
    AppendMsgpack(value, body);
  }
  if (!job_written)
    write_job();
  return Finish(WrapMsgpack(field, body));
}

absl::StatusOr<codec::Json> DecodeObject(std::string_view bytes) {
  codec::Json j = codec::Json::from_msgpack(bytes.begin(), bytes.end(), /*strict=*/true,
                                            /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return absl::DataLossError("value is not a MessagePack object");
  auto z = j.find(kCompressedField);
  if (z == j.end() || j.size() != 1)
    return j;
  if (!z->is_binary())
    return absl::DataLossError("compressed value is not binary");
  const std::vector<uint8_t>& frame = z->get_binary();
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxRecordBytes)
    return absl::DataLossError("compressed value has a bad frame header");
  std::vector<uint8_t> plain(size);
  const size_t n = ZSTD_decompress(plain.data(), plain.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size)
    return absl::DataLossError(std::string("compressed value cannot be decompressed: ") +
                               (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  codec::Json inner = codec::Json::from_msgpack(plain.begin(), plain.end(), /*strict=*/true,
                                                /*allow_exceptions=*/false);
  if (inner.is_discarded() || !inner.is_object())
    return absl::DataLossError("decompressed value is not a MessagePack object");
  return inner;
}

absl::StatusOr<codec::Json> Decode(const char* field, std::string_view bytes) {
  auto j = DecodeObject(bytes);
  if (!j.ok())
    return j.status();
  auto it = j->find(field);
  if (it == j->end())
    return absl::DataLossError(std::string("value has no \"") + field + "\" field");
  return std::move(*it);
}

}  // namespace drover::state
