// The keys that sign cache records and check their signatures
// (HMAC-SHA256, OpenSSL's libcrypto).
//
// The disk folder and the Redis server hold native code that every process
// loads and runs: without signatures, whoever can write either runs code in
// all of them. A Signer with keys signs each record it writes with the
// first key and accepts a record only when one of its keys made the
// signature, so that keys can be rotated: the new key first, the old ones
// after it until their records have aged out. A Signer without keys signs
// nothing and checks nothing (the tiers are then trusted, as before).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/support/status.h"

namespace shapejit::cache {

class Signer {
 public:
  static constexpr size_t kSignatureBytes = 32;
  // A key shorter than this is refused: it would be guessed.
  static constexpr size_t kMinKeyBytes = 32;

  Signer() = default;  // no keys: signs and checks nothing
  static Expected<Signer> with_keys(std::vector<std::string> keys);

  // The keys from `files` (the config's cache.sign.key_file) or, when the
  // environment variable kKeysVariable is set, from it instead: hex keys
  // separated by commas, for containers that pass secrets that way. A file
  // holds its key as bytes; a trailing newline is not part of it.
  static constexpr const char* kKeysVariable = "SHAPEJIT_CACHE_SIGN_KEYS";
  static Expected<Signer> load(const std::vector<std::string>& files);

  bool enabled() const { return !keys_.empty(); }
  size_t key_count() const { return keys_.size(); }
  // The signature of `bytes` under the first key (enabled() only).
  std::string sign(std::string_view bytes) const;
  // Whether one of the keys signed `bytes` with `signature` (compared in
  // constant time).
  bool verify(std::string_view bytes, std::string_view signature) const;

 private:
  std::vector<std::string> keys_;
};

}  // namespace shapejit::cache
