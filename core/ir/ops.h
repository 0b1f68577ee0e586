// The v1 op set. TRACE_FORMAT.md's table is the authority on operands,
// attributes and semantics; this table is its machine-readable form: each
// op's class (which shape rule and kernel family it uses), how many operands
// it takes, and which attributes it accepts.
#pragma once

#include <cstddef>
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
};
inline constexpr size_t kNumOps = static_cast<size_t>(Op::kSymMax) + 1;

// The ops of each class with more than one, as lists for switches over Op:
// `SJ_UNARY_OPS(SJ_OP_CASE)` is the case labels of every unary op. A
// switch over Op has no `default:` (the build has -Werror=switch): one
// that handles a family names its ops one by one and passes the others on
// by their lists, so that a new op, added to its class's list, fails to
// compile every switch that handles its family until each handles it.
// SJ_ALL_OPS lists every op once (checked below; tests/core/ir/ops_test.cpp
// checks each list against op_info's classes).
#define SJ_OP_CASE(op) case ::shapejit::ir::Op::op:
#define SJ_UNARY_OPS(X)                                                                                                      \
  X(kNeg) X(kAbs) X(kExp) X(kLog) X(kSqrt) X(kRsqrt) X(kTanh) X(kSigmoid) X(kRelu) X(kSilu) X(kSin) X(kCos) X(kErf) X(kGelu) \
  X(kTan) X(kAsin) X(kAcos) X(kAtan) X(kSinh) X(kCosh) X(kAsinh) X(kAcosh) X(kAtanh) X(kLog1p) X(kExpm1) X(kLog2) X(kLog10) \
  X(kExp2) X(kCbrt) X(kFloor) X(kCeil) X(kTrunc) X(kRint) X(kInvert)
#define SJ_ARITH_OPS(X)                                                                                                       \
  X(kAdd) X(kSub) X(kMul) X(kDiv) X(kPow) X(kMaximum) X(kMinimum) X(kAtan2) X(kHypot) X(kFmod) X(kNextafter) X(kBitAnd) \
  X(kBitOr) X(kBitXor) X(kShiftLeft) X(kShiftRight) X(kGcd)
#define SJ_LOGICAL_OPS(X) X(kAnd) X(kOr)
#define SJ_COMPARE_OPS(X) X(kEq) X(kNe) X(kLt) X(kLe) X(kGt) X(kGe)
#define SJ_REDUCE_OPS(X) X(kSum) X(kMean) X(kMax) X(kMin) X(kProd)
#define SJ_SCAN_OPS(X) X(kCumsum) X(kCumprod) X(kCummax) X(kCummin) X(kSort) X(kArgsort)
#define SJ_SOFTMAX_OPS(X) X(kSoftmax) X(kLogSoftmax)
#define SJ_INDEX_PUT_OPS(X) X(kIndexPut) X(kIndexAdd) X(kIndexMul) X(kIndexMax) X(kIndexMin)
#define SJ_SYM_BINARY_OPS(X) X(kSymAdd) X(kSymSub) X(kSymMul) X(kSymFloorDiv) X(kSymMod) X(kSymMin) X(kSymMax)
// Families of classes, for switches that pass several on at once.
// Pointwise (is_pointwise): one result element from the operands' at its index.
#define SJ_POINTWISE_OPS(X) SJ_UNARY_OPS(X) X(kCast) X(kNot) SJ_ARITH_OPS(X) SJ_LOGICAL_OPS(X) SJ_COMPARE_OPS(X) X(kWhere)
// Views of their first operand.
#define SJ_VIEW_OPS(X) X(kReshape) X(kPermute) X(kTranspose) X(kExpand) X(kSlice) X(kSqueeze) X(kUnsqueeze)
// Reductions and normalizations along axes.
#define SJ_ALONG_AXES_OPS(X) SJ_REDUCE_OPS(X) X(kArgmax) SJ_SCAN_OPS(X) SJ_SOFTMAX_OPS(X) X(kLayerNorm) X(kRmsNorm)
// Gathers, scatters, makers and data-dependent shapes.
#define SJ_INDEXING_OPS(X) X(kConcat) X(kIndexSelect) X(kEmbedding) X(kFull) X(kArange) X(kNonzero) X(kMaskedSelect) SJ_INDEX_PUT_OPS(X)
#define SJ_SYM_OPS(X) X(kSymSize) SJ_SYM_BINARY_OPS(X)
// Every op outside the pointwise family, for a switch that handles that
// family's ops one by one and passes the others on.
#define SJ_NOT_POINTWISE_OPS(X) SJ_ALONG_AXES_OPS(X) X(kMatmul) SJ_VIEW_OPS(X) SJ_INDEXING_OPS(X) SJ_SYM_OPS(X)
// Every op outside the unary and the arithmetic classes.
#define SJ_NOT_UNARY_OPS(X) X(kCast) X(kNot) SJ_ARITH_OPS(X) SJ_LOGICAL_OPS(X) SJ_COMPARE_OPS(X) X(kWhere) SJ_NOT_POINTWISE_OPS(X)
#define SJ_NOT_ARITH_OPS(X) SJ_UNARY_OPS(X) X(kCast) X(kNot) SJ_LOGICAL_OPS(X) SJ_COMPARE_OPS(X) X(kWhere) SJ_NOT_POINTWISE_OPS(X)
#define SJ_ALL_OPS(X) SJ_POINTWISE_OPS(X) SJ_ALONG_AXES_OPS(X) X(kMatmul) SJ_VIEW_OPS(X) SJ_INDEXING_OPS(X) SJ_SYM_OPS(X)

enum class OpClass : uint8_t {
  kUnary, kCast, kNot, kArith, kLogical, kCompare, kWhere,
  kReduce, kArgmax, kScan, kSoftmax, kLayerNorm, kRmsNorm, kMatmul,
  kReshape, kPermute, kTranspose, kExpand, kSlice, kConcat, kSqueeze, kUnsqueeze,
  kIndexSelect, kEmbedding, kFull, kArange, kNonzero, kMaskedSelect,
  kIndexPut,  // index_put, index_add, index_mul, index_max, index_min: a scatter along `dim`
  kSymSize, kSymBinary,
};

// The classes in the same families, for switches over OpClass.
#define SJ_CLASS_CASE(cls) case ::shapejit::ir::OpClass::cls:
#define SJ_POINTWISE_CLASSES(X) X(kUnary) X(kCast) X(kNot) X(kArith) X(kLogical) X(kCompare) X(kWhere)
#define SJ_ALONG_AXES_CLASSES(X) X(kReduce) X(kArgmax) X(kScan) X(kSoftmax) X(kLayerNorm) X(kRmsNorm)
#define SJ_VIEW_CLASSES(X) X(kReshape) X(kPermute) X(kTranspose) X(kExpand) X(kSlice) X(kSqueeze) X(kUnsqueeze)
#define SJ_INDEXING_CLASSES(X) X(kConcat) X(kIndexSelect) X(kEmbedding) X(kFull) X(kArange) X(kNonzero) X(kMaskedSelect) X(kIndexPut)
#define SJ_SYM_CLASSES(X) X(kSymSize) X(kSymBinary)

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

#define SJ_COUNT_OP(op) +1
static_assert(0 SJ_ALL_OPS(SJ_COUNT_OP) == kNumOps, "SJ_ALL_OPS lists every op once");
#undef SJ_COUNT_OP

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
