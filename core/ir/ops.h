// The v1 op set. TRACE_FORMAT.md's table is the authority on operands,
// attributes and semantics; this table is its machine-readable form: each
// op's class (which shape rule and kernel family it uses), how many operands
// it takes, and which attributes it accepts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace shapejit::ir {

enum class Op : uint8_t {
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kTanh, kSigmoid, kRelu, kSilu, kSin, kCos, kErf, kGelu,
  // Float functions NumPy has (libm's; floor, ceil, trunc and rint round exactly).
  kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kLog1p,
  kExpm1, kLog2, kLog10, kExp2, kCbrt, kFloor, kCeil, kTrunc, kRint,
  kCast, kNot,
  kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum, kAtan2, kHypot, kFmod, kNextafter,
  kBitAnd, kBitOr, kBitXor, kShiftLeft, kShiftRight, kGcd, kInvert,  // integers only
  kAnd, kOr,
  kEq, kNe, kLt, kLe, kGt, kGe,
  kWhere,
  kSum, kMean, kMax, kMin, kProd, kArgmax,
  kCumsum, kCumprod, kCummax, kCummin, kSort, kArgsort,
  kSoftmax, kLogSoftmax, kLayerNorm, kRmsNorm,
  kMatmul,
  kReshape, kPermute, kTranspose, kExpand, kSlice, kConcat, kSqueeze, kUnsqueeze,
  kIndexSelect, kEmbedding,
  kFull, kArange,
  kNonzero, kMaskedSelect,
  kIndexPut, kIndexAdd, kIndexMul, kIndexMax, kIndexMin,
  kSymSize, kSymAdd, kSymSub, kSymMul, kSymFloorDiv, kSymMod, kSymMin, kSymMax,
  kCount_,
};

enum class OpClass : uint8_t {
  kUnary, kCast, kNot, kArith, kLogical, kCompare, kWhere,
  kReduce, kArgmax, kScan, kSoftmax, kLayerNorm, kRmsNorm, kMatmul,
  kReshape, kPermute, kTranspose, kExpand, kSlice, kConcat, kSqueeze, kUnsqueeze,
  kIndexSelect, kEmbedding, kFull, kArange, kNonzero, kMaskedSelect,
  kIndexPut,  // index_put, index_add, index_mul, index_max, index_min: a scatter along `dim`
  kSymSize, kSymBinary,
};

enum AttrBit : uint32_t {
  kAttrAxes = 1u << 0,
  kAttrKeepdim = 1u << 1,
  kAttrDim = 1u << 2,
  kAttrDim0 = 1u << 3,
  kAttrDim1 = 1u << 4,
  kAttrPerm = 1u << 5,
  kAttrDims = 1u << 6,
  kAttrDtype = 1u << 7,
  kAttrEps = 1u << 8,
  kAttrValue = 1u << 9,
  kAttrApproximate = 1u << 10,
};

struct OpInfo {
  Op op;
  const char* name;
  OpClass cls;
  int min_in, max_in;  // max_in < 0: any number
  uint32_t attrs;      // accepted
  uint32_t required;   // must be given
};

const OpInfo& op_info(Op op);
// Unary, cast, not, arithmetic, logical, comparison and where: one result
// element from the broadcast operands' elements at the same index.
bool is_pointwise(OpClass c);
// bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift: integers only.
inline bool is_bitwise(Op op) { return op >= Op::kBitAnd && op <= Op::kShiftRight; }
inline const char* op_name(Op op) { return op_info(op).name; }
std::optional<Op> parse_op(std::string_view name);
const char* attr_name(AttrBit bit);

}  // namespace shapejit::ir
