#include "common/ids.h"

#include <random>
#include <string_view>

namespace drover::common {
namespace {

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

}  // namespace

std::string RandomHex(size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(n, '0');
  std::uniform_int_distribution<int> dist(0, 15);
  for (char& c : out) {
    c = kHex[dist(Rng())];
  }
  return out;
}

double RandomUnit() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(Rng());
}

std::string NewUuid() {
  std::string hex = RandomHex(32);
  hex[12] = '4';                                                      // version 4
  hex[16] = "89ab"[std::uniform_int_distribution<int>(0, 3)(Rng())];  // variant 10xx
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

bool IsUuid(std::string_view s) {
  if (s.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const char c = s[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

}  // namespace drover::common
