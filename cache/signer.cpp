#include "cache/signer.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace shapejit::cache {

namespace {

std::string hmac_sha256(std::string_view key, std::string_view bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out,
       &length);
  return std::string(reinterpret_cast<const char*>(out), length);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One key of the environment variable, `where` naming it in errors.
Expected<std::string> from_hex(std::string_view hex, const std::string& where) {
  if (hex.size() % 2 != 0) return invalid(where + ": an odd number of hex digits");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return invalid(where + ": not a hex digit at character " + std::to_string(hi < 0 ? i + 1 : i + 2));
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace

Expected<Signer> Signer::with_keys(std::vector<std::string> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].size() < kMinKeyBytes) {
      return invalid("signing key " + std::to_string(i + 1) + " has " + std::to_string(keys[i].size()) + " bytes; at least " +
                     std::to_string(kMinKeyBytes) + " are needed (e.g. `openssl rand -hex 32 > KEY`)");
    }
  }
  Signer s;
  s.keys_ = std::move(keys);
  return s;
}

Expected<Signer> Signer::load(const std::vector<std::string>& files) {
  std::vector<std::string> keys;
  if (const char* env = std::getenv(kKeysVariable); env && *env) {
    const std::string_view all = env;
    for (size_t start = 0, n = 1; start <= all.size(); ++n) {
      const size_t comma = std::min(all.find(',', start), all.size());
      const std::string where = std::string(kKeysVariable) + ", key " + std::to_string(n);
      keys.push_back(SJ_TRY(from_hex(all.substr(start, comma - start), where)));
      if (keys.back().size() < kMinKeyBytes) {
        return invalid(where + ": " + std::to_string(keys.back().size()) + " bytes; at least " + std::to_string(kMinKeyBytes) +
                       " are needed (" + std::to_string(2 * kMinKeyBytes) + " hex digits)");
      }
      start = comma + 1;
    }
  } else {
    for (const std::string& path : files) {
      std::ifstream in(path, std::ios::binary);
      if (!in) return Status(Code::kIo, "config: cache.sign.key_file: cannot read \"" + path + "\": " + std::strerror(errno));
      std::ostringstream bytes;
      bytes << in.rdbuf();
      std::string key = bytes.str();
      while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
      if (key.size() < kMinKeyBytes) {
        return invalid("config: cache.sign.key_file: \"" + path + "\" holds " + std::to_string(key.size()) + " bytes; a key needs at least " +
                       std::to_string(kMinKeyBytes) + " (e.g. `openssl rand -hex 32 > KEY`)");
      }
      keys.push_back(std::move(key));
    }
  }
  return with_keys(std::move(keys));
}

std::string Signer::sign(std::string_view bytes) const { return hmac_sha256(keys_.front(), bytes); }

bool Signer::verify(std::string_view bytes, std::string_view signature) const {
  if (signature.size() != kSignatureBytes) return false;
  bool ok = false;
  for (const std::string& key : keys_) {  // every key, so that the time says nothing of which
    const std::string expected = hmac_sha256(key, bytes);
    ok |= CRYPTO_memcmp(expected.data(), signature.data(), kSignatureBytes) == 0;
  }
  return ok;
}

}  // namespace shapejit::cache
