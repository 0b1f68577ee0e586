#include "cache/record.h"

#include <xxhash.h>

#include <cstring>

namespace shapejit::cache {

namespace {

constexpr char kMagic[8] = {'S', 'J', 'K', 'E', 'R', 'N', 'E', 'L'};
constexpr size_t kMaxTarget = 4096;

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t get(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(in[at + static_cast<size_t>(i)])} << (8 * i);
  return v;
}

Status bad(const std::string& why) { return Status(Code::kIo, why); }

}  // namespace

std::string encode_record(const Hash128& key, std::string_view target, std::string_view payload) {
  std::string out(kMagic, sizeof kMagic);
  out.reserve(kRecordHeaderBytes + target.size() + payload.size());
  put(out, kRecordVersion, 4);
  put(out, target.size(), 4);
  put(out, key.hi, 8);
  put(out, key.lo, 8);
  put(out, payload.size(), 8);
  put(out, XXH3_64bits(payload.data(), payload.size()), 8);
  out += target;
  out += payload;
  return out;
}

Expected<RecordHeader> decode_header(std::string_view bytes) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return bad("not a shapejit cache record (bad magic)");
  if (bytes.size() < kRecordHeaderBytes) return bad("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  const uint32_t version = static_cast<uint32_t>(get(bytes, 8, 4));
  if (version != kRecordVersion) {
    return bad("format version " + std::to_string(version) + " (this shapejit reads " + std::to_string(kRecordVersion) + ")");
  }
  RecordHeader h;
  const uint64_t target_bytes = get(bytes, 12, 4);
  if (target_bytes > kMaxTarget) return bad("a target of " + std::to_string(target_bytes) + " bytes (at most " + std::to_string(kMaxTarget) + ")");
  h.key = {get(bytes, 16, 8), get(bytes, 24, 8)};
  h.payload_bytes = get(bytes, 32, 8);
  h.checksum = get(bytes, 40, 8);
  if (bytes.size() < kRecordHeaderBytes + target_bytes) return bad("truncated inside the target");
  h.target = std::string(bytes.substr(kRecordHeaderBytes, target_bytes));
  return h;
}

Expected<std::string_view> decode_record(std::string_view bytes, const Hash128& key, std::string_view target) {
  const RecordHeader h = SJ_TRY(decode_header(bytes));
  const size_t start = kRecordHeaderBytes + h.target.size();
  const uint64_t have = bytes.size() - start;
  if (have != h.payload_bytes) {
    return bad((have < h.payload_bytes ? "truncated: " : "trailing bytes: ") + std::to_string(have) + " payload bytes, the header says " +
               std::to_string(h.payload_bytes));
  }
  if (!(h.key == key)) return bad("holds key " + h.key.hex() + ", not " + key.hex());
  if (!target.empty() && h.target != target) return bad("built for \"" + h.target + "\", not \"" + std::string(target) + "\"");
  const std::string_view payload = bytes.substr(start);
  if (XXH3_64bits(payload.data(), payload.size()) != h.checksum) return bad("checksum mismatch: the payload is corrupt");
  return payload;
}

}  // namespace shapejit::cache
