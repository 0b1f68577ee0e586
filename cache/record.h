// A cache record: what the disk and remote tiers hold under a key, the same
// bytes in a file and in a Redis value.
//
//   offset  size  field
//        0     8  magic "SJKERNEL"
//        8     4  format version (kRecordVersion), little-endian like every field
//       12     4  target length T
//       16    16  key (hi, lo)
//       32     8  payload length P
//       40     8  XXH3-64 of the payload
//       48     T  target (the backend's name and target string)
//     48+T     P  payload (an object file, a cubin)
//
// A record is read whole and checked whole: a record cut short, from
// another program, of another version, under another key or target, or
// whose payload fails its checksum is rejected with the reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/support/hash.h"
#include "core/support/status.h"

namespace shapejit::cache {

inline constexpr uint32_t kRecordVersion = 1;
inline constexpr size_t kRecordHeaderBytes = 48;

std::string encode_record(const Hash128& key, std::string_view target, std::string_view payload);

// What a record says about itself, read from its header alone (the cache
// command lists entries without reading their payloads).
struct RecordHeader {
  Hash128 key;
  std::string target;
  uint64_t payload_bytes = 0;
  uint64_t checksum = 0;
};
Expected<RecordHeader> decode_header(std::string_view bytes);

// The payload of a whole record, checked against the key and target it is
// expected under (an empty `target` accepts any); a view into `bytes`.
Expected<std::string_view> decode_record(std::string_view bytes, const Hash128& key, std::string_view target);

}  // namespace shapejit::cache
