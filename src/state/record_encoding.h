// How records are encoded: MessagePack of `{field: value}`, zstd-compressed above a
// size. The bytes are canonical (equal values give equal bytes), which the stores'
// deduplication of identical writes relies on.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

#include "codec/json.h"
#include "model/allocation.h"

namespace drover::state {

// The canonical encoding: MessagePack of `{field: value}`.
std::string Encode(const char* field, const codec::Json& value);
absl::StatusOr<codec::Json> Decode(const char* field, std::string_view bytes);
// A record's whole object, `{field: value}`, decompressed if it was stored compressed.
absl::StatusOr<codec::Json> DecodeObject(std::string_view bytes);

// Exactly Encode(field, codec::ToJson(alloc)). The job's part is encoded once per job
// object and reused for the other allocations of that object (a 1,000-allocation plan
// shares one), so it relies on jobs being immutable once shared, as the model says.
std::string EncodeAllocation(const char* field, const model::Allocation& alloc);

}  // namespace drover::state
