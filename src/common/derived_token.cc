#include "common/derived_token.h"

#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

namespace drover::common {

namespace {

// Nettle's HMAC-SHA256, linked from its archive (src/common/CMakeLists.txt): OpenSSL's
// libcrypto, mapped for this one function, held 1.4 MiB resident in the agent, and its
// archive would add 3.5 MB of text.
std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  hmac_sha256_ctx ctx;
  hmac_sha256_set_key(&ctx, key.size(), reinterpret_cast<const uint8_t*>(key.data()));
  hmac_sha256_update(&ctx, message.size(), reinterpret_cast<const uint8_t*>(message.data()));
  uint8_t mac[SHA256_DIGEST_SIZE];
  hmac_sha256_digest(&ctx, sizeof mac, mac);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(sizeof mac * 2);
  for (size_t i = 0; i < sizeof mac; ++i) {
    hex.push_back(kHex[mac[i] >> 4]);
    hex.push_back(kHex[mac[i] & 15]);
  }
  return hex;
}

}  // namespace

std::string MigrateToken(std::string_view node_secret, std::string_view alloc_id) {
  // The purpose is part of the message: a token for one use is never valid for another.
  return HmacSha256Hex(node_secret, std::string("drover-migrate\n").append(alloc_id));
}

bool ValidMigrateToken(std::string_view node_secret, std::string_view alloc_id,
                       std::string_view token) {
  if (node_secret.empty() || token.empty())
    return false;
  const std::string want = MigrateToken(node_secret, alloc_id);
  return token.size() == want.size() && memeql_sec(token.data(), want.data(), want.size()) != 0;
}

}  // namespace drover::common
