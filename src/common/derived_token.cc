#include "common/derived_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/status_macros.h"

namespace drover::common {

namespace {

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const unsigned char* out =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  DROVER_CHECK(out != nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
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
  return token.size() == want.size() && CRYPTO_memcmp(token.data(), want.data(), want.size()) == 0;
}

}  // namespace drover::common
