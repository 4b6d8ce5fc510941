// The values the state DB's crash-consistency test writes (crash_writer_main.cc) and
// checks (crash_consistency_test.cc): derived from the key and a sequence number only,
// so the checker knows the exact bytes every acknowledged write must have left.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::state {

inline constexpr int kCrashWriterKeys = 8;

// Up to ~6 KB of letters that depend on every bit of (key, seq): a record whose bytes
// were torn, mixed with another's or left stale does not match.
inline std::string CrashWriterPad(const std::string& key, uint64_t seq) {
  uint64_t x = seq * 0x9e3779b97f4a7c15ull;
  for (char c : key)
    x = (x ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  std::string pad(static_cast<size_t>(x % 6000), ' ');
  for (char& c : pad) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>('a' + x % 26);
  }
  return pad;
}

// The allocation's acknowledged_state record.
inline codec::Json CrashWriterValue(const std::string& key, uint64_t seq) {
  return codec::Json{{"key", key}, {"seq", seq}, {"pad", CrashWriterPad(key, seq)}};
}

// Its task "web"'s local state.
inline codec::Json CrashWriterLocal(const std::string& key, uint64_t seq) {
  return codec::Json{{"seq", seq}, {"pad", CrashWriterPad(key + "/web", seq)}};
}

}  // namespace drover::state
