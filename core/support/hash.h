// Stable hashing: the same input hashes the same on every run and machine,
// because cache keys are written to disk and shared across a fleet.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shapejit {

inline uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t hash_combine(uint64_t seed, uint64_t v) {
  return mix64(seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)));
}

struct Hash128 {
  uint64_t hi = 0, lo = 0;
  bool operator==(const Hash128&) const = default;
  std::string hex() const;
};

// Two independent 64-bit lanes; 128 bits make accidental key collisions
// across a fleet's cache negligible.
class Hasher {
 public:
  Hasher& add(uint64_t v) {
    a_ = hash_combine(a_, v);
    b_ = hash_combine(b_ ^ 0x5851f42d4c957f2dULL, mix64(v + 0x14057b7ef767814fULL));
    return *this;
  }
  Hasher& add_i64(int64_t v) { return add(static_cast<uint64_t>(v)); }
  Hasher& add_f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add(bits);
  }
  Hasher& add_str(std::string_view s) {
    add(s.size());
    for (unsigned char c : s) add(c);
    return *this;
  }
  Hasher& add_hash(const Hash128& h) { return add(h.hi).add(h.lo); }
  Hash128 finish() const { return {mix64(a_), mix64(b_ ^ 0xda942042e4dd58b5ULL)}; }

 private:
  uint64_t a_ = 0x243f6a8885a308d3ULL;
  uint64_t b_ = 0x13198a2e03707344ULL;
};

inline std::string Hash128::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = digits[(hi >> (4 * i)) & 15];
    s[31 - i] = digits[(lo >> (4 * i)) & 15];
  }
  return s;
}

}  // namespace shapejit
