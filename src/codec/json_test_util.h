// Shared helpers for the codec tests.
#pragma once

#include <cstdint>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codec/json.h"

namespace drover::codec::testutil {

// 2026-08-21T12:00:05.123456789Z
inline constexpr int64_t kSomeTimeNs = 1787313605123456789;

inline Json MustParse(const std::string& text) {
  absl::StatusOr<Json> j = ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : Json();
}

}  // namespace drover::codec::testutil
