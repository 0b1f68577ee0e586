// A cache record: what the disk and remote tiers hold under a key, the same
// bytes in a file and in a Redis value.
//
//   offset  size  field
//        0     8  magic "SJKERNEL"
//        8     4  format version (kRecordVersion), little-endian like every field
//       12     4  target length T
//       16    16  key (hi, lo)
//       32     8  payload length P
//       40     8  XXH3-64 of every other byte before the signature (the
//                 header's, the target's, the payload's)
//       48     4  signature length S: 0 (unsigned) or 32
//       52     4  zero
//       56     T  target (the backend's name and target string)
//     56+T     P  payload (an object file, a cubin)
//   56+T+P     S  HMAC-SHA256 of every byte before it (signer.h)
//
// A record is read whole and checked whole: a record cut short, from
// another program, of another version, under another key or target, or
// whose bytes fail their checksum is rejected with the reason. With a
// signer that has keys, so is one that is unsigned or whose signature none
// of its keys made; that is checked before anything else is believed (the
// checksum stops accidents, the signature stops people).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cache/signer.h"
#include "core/support/hash.h"
#include "core/support/status.h"

namespace shapejit::cache {

inline constexpr uint32_t kRecordVersion = 3;
inline constexpr size_t kRecordHeaderBytes = 56;

// Signed with the signer's first key when it has keys.
std::string encode_record(const Hash128& key, std::string_view target, std::string_view payload, const Signer& signer = Signer());

// What a record says about itself, read from its header alone (the cache
// command lists entries without reading their payloads).
struct RecordHeader {
  Hash128 key;
  std::string target;
  uint64_t payload_bytes = 0;
  uint64_t checksum = 0;
  uint32_t signature_bytes = 0;
};
Expected<RecordHeader> decode_header(std::string_view bytes);

// Why a record was rejected, where the caller treats the kinds apart (a
// signature failure is logged once per tier and counted on its own).
enum class Rejection { kNone, kMalformed, kSignature };

// The payload of a whole record, checked against the key and target it is
// expected under (an empty `target` accepts any) and, when `signer` has
// keys, against its signature; a view into `bytes`.
Expected<std::string_view> decode_record(std::string_view bytes, const Hash128& key, std::string_view target, const Signer& signer = Signer(),
                                         Rejection* why = nullptr);

}  // namespace shapejit::cache
