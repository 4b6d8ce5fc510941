// Lenient field access on API responses: a missing key, a null or a value of another
// type yields the default instead of throwing, so a CLI talking to a newer or older
// agent degrades to blank cells rather than failing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codec/json.h"

namespace drover::cli {

// The member `key` of object `j`, or nullptr.
const codec::Json* JsonMember(const codec::Json& j, std::string_view key);

std::string JsonString(const codec::Json& j, std::string_view key);
int64_t JsonInt(const codec::Json& j, std::string_view key);
uint64_t JsonUint(const codec::Json& j, std::string_view key);
bool JsonBool(const codec::Json& j, std::string_view key);
// Strings of an array member; non-string items are skipped.
std::vector<std::string> JsonStrings(const codec::Json& j, std::string_view key);
// True when the member exists and is neither null nor false.
bool JsonPresent(const codec::Json& j, std::string_view key);

}  // namespace drover::cli
