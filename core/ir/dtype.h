// Element types and their DLPack encodings.
#pragma once

#include <dlpack/dlpack.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

namespace shapejit::ir {

enum class DType : uint8_t { kF32, kF64, kI32, kI64, kBool };
inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kBool};

const char* dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view s);
size_t dtype_size(DType t);
inline bool is_float(DType t) { return t == DType::kF32 || t == DType::kF64; }
inline bool is_int(DType t) { return t == DType::kI32 || t == DType::kI64; }

DLDataType to_dl(DType t);
std::optional<DType> from_dl(DLDataType t);
// One word for a fast compare on the dispatch path: code | bits << 8 |
// lanes << 16, which on a little-endian host is the struct's own bytes.
inline uint32_t dl_word(DLDataType t) {
  static_assert(sizeof(DLDataType) == 4);
  if constexpr (std::endian::native == std::endian::little) {
    uint32_t w;
    std::memcpy(&w, &t, 4);
    return w;
  } else {
    return uint32_t(t.code) | (uint32_t(t.bits) << 8) | (uint32_t(t.lanes) << 16);
  }
}

// Calls f.template operator()<T>() with the C++ type of `t`.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kF32: return f.template operator()<float>();
    case DType::kF64: return f.template operator()<double>();
    case DType::kI32: return f.template operator()<int32_t>();
    case DType::kI64: return f.template operator()<int64_t>();
    case DType::kBool: return f.template operator()<bool>();
  }
  return f.template operator()<float>();
}

// A double converted as `cast` converts: to integers truncating,
// saturating at the type's limits, NaN to 0; to bool `!= 0`.
template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace shapejit::ir
