#include "core/ir/dtype.h"

namespace shapejit::ir {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : kAllDTypes) {
    if (s == dtype_name(t)) return t;
  }
  return std::nullopt;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kF64:
    case DType::kI64: return 8;
    case DType::kBool: return 1;
  }
  return 0;
}

DLDataType to_dl(DType t) {
  switch (t) {
    case DType::kF32: return {kDLFloat, 32, 1};
    case DType::kF64: return {kDLFloat, 64, 1};
    case DType::kI32: return {kDLInt, 32, 1};
    case DType::kI64: return {kDLInt, 64, 1};
    case DType::kBool: return {kDLUInt, 8, 1};  // DLPack 0.6 has no bool code
  }
  return {kDLFloat, 32, 1};
}

std::optional<DType> from_dl(DLDataType t) {
  for (DType d : kAllDTypes) {
    if (dl_word(to_dl(d)) == dl_word(t)) return d;
  }
  // DLPack 0.8 added kDLBool (code 6); accept it from newer producers.
  constexpr uint8_t kDLBoolCode = 6;
  if (t.code == kDLBoolCode && t.bits == 8 && t.lanes == 1) return DType::kBool;
  return std::nullopt;
}

}  // namespace shapejit::ir
