#include "cache/record.h"

#include <xxhash.h>

#include <cstring>

namespace shapejit::cache {

namespace {

constexpr char kMagic[8] = {'S', 'J', 'K', 'E', 'R', 'N', 'E', 'L'};
constexpr size_t kMaxTarget = 4096;
constexpr uint64_t kMaxPayload = uint64_t{1} << 40;

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t get(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(in[at + static_cast<size_t>(i)])} << (8 * i);
  return v;
}

Status bad(const std::string& why) { return Status(Code::kIo, why); }

constexpr size_t kChecksumAt = 40;

// The checksum of a record's bytes up to its signature, but for the
// checksum's own eight.
uint64_t checksum(std::string_view unsigned_bytes) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, unsigned_bytes.data(), kChecksumAt);
  XXH3_64bits_update(state, unsigned_bytes.data() + kChecksumAt + 8, unsigned_bytes.size() - kChecksumAt - 8);
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

}  // namespace

std::string encode_record(const Hash128& key, std::string_view target, std::string_view payload, const Signer& signer) {
  std::string out(kMagic, sizeof kMagic);
  out.reserve(kRecordHeaderBytes + target.size() + payload.size() + Signer::kSignatureBytes);
  put(out, kRecordVersion, 4);
  put(out, target.size(), 4);
  put(out, key.hi, 8);
  put(out, key.lo, 8);
  put(out, payload.size(), 8);
  put(out, 0, 8);  // the checksum, below
  put(out, signer.enabled() ? Signer::kSignatureBytes : 0, 4);
  put(out, 0, 4);
  out += target;
  out += payload;
  const uint64_t sum = checksum(out);
  for (int i = 0; i < 8; ++i) out[kChecksumAt + static_cast<size_t>(i)] = static_cast<char>(sum >> (8 * i));
  if (signer.enabled()) out += signer.sign(out);
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
  if (h.payload_bytes > kMaxPayload) return bad("a payload of " + std::to_string(h.payload_bytes) + " bytes is larger than any record");
  h.checksum = get(bytes, 40, 8);
  h.signature_bytes = static_cast<uint32_t>(get(bytes, 48, 4));
  if (h.signature_bytes != 0 && h.signature_bytes != Signer::kSignatureBytes) {
    return bad("a signature of " + std::to_string(h.signature_bytes) + " bytes (0 or " + std::to_string(Signer::kSignatureBytes) + ")");
  }
  if (get(bytes, 52, 4) != 0) return bad("reserved header bytes are not zero");
  if (bytes.size() < kRecordHeaderBytes + target_bytes) return bad("truncated inside the target");
  h.target = std::string(bytes.substr(kRecordHeaderBytes, target_bytes));
  return h;
}

Expected<std::string_view> decode_record(std::string_view bytes, const Hash128& key, std::string_view target, const Signer& signer,
                                         Rejection* why) {
  Rejection ignored;
  Rejection& rejection = why ? *why : ignored;
  rejection = Rejection::kMalformed;
  const RecordHeader h = SJ_TRY(decode_header(bytes));
  const size_t start = kRecordHeaderBytes + h.target.size();
  const uint64_t have = bytes.size() - start;
  if (have != h.payload_bytes + h.signature_bytes) {
    return bad((have < h.payload_bytes + h.signature_bytes ? "truncated: " : "trailing bytes: ") + std::to_string(have) +
               " bytes after the target, the header says " + std::to_string(h.payload_bytes) + " and a signature of " +
               std::to_string(h.signature_bytes));
  }
  if (signer.enabled()) {
    rejection = Rejection::kSignature;
    if (h.signature_bytes == 0) return bad("unsigned, and this process accepts only signed records (cache.sign)");
    const size_t signed_bytes = bytes.size() - h.signature_bytes;
    if (!signer.verify(bytes.substr(0, signed_bytes), bytes.substr(signed_bytes))) {
      return bad("its signature was made by none of this process's keys (cache.sign): another key signed it, or it was altered");
    }
    rejection = Rejection::kMalformed;
  }
  if (!(h.key == key)) return bad("holds key " + h.key.hex() + ", not " + key.hex());
  if (!target.empty() && h.target != target) return bad("built for \"" + h.target + "\", not \"" + std::string(target) + "\"");
  const std::string_view payload = bytes.substr(start, h.payload_bytes);
  if (checksum(bytes.substr(0, start + h.payload_bytes)) != h.checksum) return bad("checksum mismatch: the record is corrupt");
  rejection = Rejection::kNone;
  return payload;
}

}  // namespace shapejit::cache
