#include "core/ir/ops.h"

#include "core/support/status.h"

namespace shapejit::ir {

namespace {

constexpr uint32_t kReduceAttrs = kAttrAxes | kAttrKeepdim;

constexpr OpInfo kOps[] = {
    {Op::kNeg, "neg", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAbs, "abs", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kExp, "exp", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kLog, "log", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kSqrt, "sqrt", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kRsqrt, "rsqrt", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kTanh, "tanh", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kSigmoid, "sigmoid", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kRelu, "relu", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kSilu, "silu", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kSin, "sin", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kCos, "cos", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kErf, "erf", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kGelu, "gelu", OpClass::kUnary, 1, 1, kAttrApproximate, 0},
    {Op::kTan, "tan", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAsin, "asin", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAcos, "acos", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAtan, "atan", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kSinh, "sinh", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kCosh, "cosh", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAsinh, "asinh", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAcosh, "acosh", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAtanh, "atanh", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kLog1p, "log1p", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kExpm1, "expm1", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kLog2, "log2", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kLog10, "log10", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kExp2, "exp2", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kCbrt, "cbrt", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kFloor, "floor", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kCeil, "ceil", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kTrunc, "trunc", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kRint, "rint", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kCast, "cast", OpClass::kCast, 1, 1, kAttrDtype, kAttrDtype},
    {Op::kNot, "not", OpClass::kNot, 1, 1, 0, 0},
    {Op::kAdd, "add", OpClass::kArith, 2, 2, 0, 0},
    {Op::kSub, "sub", OpClass::kArith, 2, 2, 0, 0},
    {Op::kMul, "mul", OpClass::kArith, 2, 2, 0, 0},
    {Op::kDiv, "div", OpClass::kArith, 2, 2, 0, 0},
    {Op::kPow, "pow", OpClass::kArith, 2, 2, 0, 0},
    {Op::kMaximum, "maximum", OpClass::kArith, 2, 2, 0, 0},
    {Op::kMinimum, "minimum", OpClass::kArith, 2, 2, 0, 0},
    {Op::kAtan2, "atan2", OpClass::kArith, 2, 2, 0, 0},
    {Op::kHypot, "hypot", OpClass::kArith, 2, 2, 0, 0},
    {Op::kFmod, "fmod", OpClass::kArith, 2, 2, 0, 0},
    {Op::kNextafter, "nextafter", OpClass::kArith, 2, 2, 0, 0},
    {Op::kBitAnd, "bitwise_and", OpClass::kArith, 2, 2, 0, 0},
    {Op::kBitOr, "bitwise_or", OpClass::kArith, 2, 2, 0, 0},
    {Op::kBitXor, "bitwise_xor", OpClass::kArith, 2, 2, 0, 0},
    {Op::kShiftLeft, "left_shift", OpClass::kArith, 2, 2, 0, 0},
    {Op::kShiftRight, "right_shift", OpClass::kArith, 2, 2, 0, 0},
    {Op::kGcd, "gcd", OpClass::kArith, 2, 2, 0, 0},
    {Op::kInvert, "invert", OpClass::kUnary, 1, 1, 0, 0},
    {Op::kAnd, "and", OpClass::kLogical, 2, 2, 0, 0},
    {Op::kOr, "or", OpClass::kLogical, 2, 2, 0, 0},
    {Op::kEq, "eq", OpClass::kCompare, 2, 2, 0, 0},
    {Op::kNe, "ne", OpClass::kCompare, 2, 2, 0, 0},
    {Op::kLt, "lt", OpClass::kCompare, 2, 2, 0, 0},
    {Op::kLe, "le", OpClass::kCompare, 2, 2, 0, 0},
    {Op::kGt, "gt", OpClass::kCompare, 2, 2, 0, 0},
    {Op::kGe, "ge", OpClass::kCompare, 2, 2, 0, 0},
    {Op::kWhere, "where", OpClass::kWhere, 3, 3, 0, 0},
    {Op::kSum, "sum", OpClass::kReduce, 1, 1, kReduceAttrs, 0},
    {Op::kMean, "mean", OpClass::kReduce, 1, 1, kReduceAttrs, 0},
    {Op::kMax, "max", OpClass::kReduce, 1, 1, kReduceAttrs, 0},
    {Op::kMin, "min", OpClass::kReduce, 1, 1, kReduceAttrs, 0},
    {Op::kProd, "prod", OpClass::kReduce, 1, 1, kReduceAttrs, 0},
    {Op::kArgmax, "argmax", OpClass::kArgmax, 1, 1, kAttrDim | kAttrKeepdim, kAttrDim},
    {Op::kCumsum, "cumsum", OpClass::kScan, 1, 1, kAttrDim, kAttrDim},
    {Op::kCumprod, "cumprod", OpClass::kScan, 1, 1, kAttrDim, kAttrDim},
    {Op::kCummax, "cummax", OpClass::kScan, 1, 1, kAttrDim, kAttrDim},
    {Op::kCummin, "cummin", OpClass::kScan, 1, 1, kAttrDim, kAttrDim},
    {Op::kSort, "sort", OpClass::kScan, 1, 1, kAttrDim, kAttrDim},
    {Op::kArgsort, "argsort", OpClass::kScan, 1, 1, kAttrDim, kAttrDim},
    {Op::kSoftmax, "softmax", OpClass::kSoftmax, 1, 1, kAttrDim, 0},
    {Op::kLogSoftmax, "log_softmax", OpClass::kSoftmax, 1, 1, kAttrDim, 0},
    {Op::kLayerNorm, "layer_norm", OpClass::kLayerNorm, 1, 3, kAttrAxes | kAttrEps, 0},
    {Op::kRmsNorm, "rms_norm", OpClass::kRmsNorm, 1, 2, kAttrAxes | kAttrEps, 0},
    {Op::kMatmul, "matmul", OpClass::kMatmul, 2, 2, 0, 0},
    {Op::kReshape, "reshape", OpClass::kReshape, 1, -1, 0, 0},
    {Op::kPermute, "permute", OpClass::kPermute, 1, 1, kAttrPerm, kAttrPerm},
    {Op::kTranspose, "transpose", OpClass::kTranspose, 1, 1, kAttrDim0 | kAttrDim1, kAttrDim0 | kAttrDim1},
    {Op::kExpand, "expand", OpClass::kExpand, 1, -1, 0, 0},
    {Op::kSlice, "slice", OpClass::kSlice, 4, 4, kAttrDim, kAttrDim},
    {Op::kConcat, "concat", OpClass::kConcat, 1, -1, kAttrDim, kAttrDim},
    {Op::kSqueeze, "squeeze", OpClass::kSqueeze, 1, 1, kAttrDims, kAttrDims},
    {Op::kUnsqueeze, "unsqueeze", OpClass::kUnsqueeze, 1, 1, kAttrDim, kAttrDim},
    {Op::kIndexSelect, "index_select", OpClass::kIndexSelect, 2, 2, kAttrDim, kAttrDim},
    {Op::kEmbedding, "embedding", OpClass::kEmbedding, 2, 2, 0, 0},
    {Op::kFull, "full", OpClass::kFull, 0, -1, kAttrValue | kAttrDtype, kAttrValue | kAttrDtype},
    {Op::kArange, "arange", OpClass::kArange, 3, 3, kAttrDtype, 0},
    {Op::kNonzero, "nonzero", OpClass::kNonzero, 1, 1, 0, 0},
    {Op::kMaskedSelect, "masked_select", OpClass::kMaskedSelect, 2, 2, 0, 0},
    {Op::kIndexPut, "index_put", OpClass::kIndexPut, 3, 3, kAttrDim, kAttrDim},
    {Op::kIndexAdd, "index_add", OpClass::kIndexPut, 3, 3, kAttrDim, kAttrDim},
    {Op::kIndexMul, "index_mul", OpClass::kIndexPut, 3, 3, kAttrDim, kAttrDim},
    {Op::kIndexMax, "index_max", OpClass::kIndexPut, 3, 3, kAttrDim, kAttrDim},
    {Op::kIndexMin, "index_min", OpClass::kIndexPut, 3, 3, kAttrDim, kAttrDim},
    {Op::kSymSize, "sym_size", OpClass::kSymSize, 1, 1, kAttrDim, kAttrDim},
    {Op::kSymAdd, "sym_add", OpClass::kSymBinary, 2, 2, 0, 0},
    {Op::kSymSub, "sym_sub", OpClass::kSymBinary, 2, 2, 0, 0},
    {Op::kSymMul, "sym_mul", OpClass::kSymBinary, 2, 2, 0, 0},
    {Op::kSymFloorDiv, "sym_floordiv", OpClass::kSymBinary, 2, 2, 0, 0},
    {Op::kSymMod, "sym_mod", OpClass::kSymBinary, 2, 2, 0, 0},
    {Op::kSymMin, "sym_min", OpClass::kSymBinary, 2, 2, 0, 0},
    {Op::kSymMax, "sym_max", OpClass::kSymBinary, 2, 2, 0, 0},
};

static_assert(sizeof(kOps) / sizeof(kOps[0]) == kNumOps, "one row per op");

constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  }
  return true;
}
static_assert(rows_in_enum_order(), "rows in the order of enum Op");

}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<size_t>(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (const OpInfo& info : kOps) {
    if (name == info.name) return info.op;
  }
  return std::nullopt;
}

const char* attr_name(AttrBit bit) {
  switch (bit) {
    case kAttrAxes: return "axes";
    case kAttrKeepdim: return "keepdim";
    case kAttrDim: return "dim";
    case kAttrDim0: return "dim0";
    case kAttrDim1: return "dim1";
    case kAttrPerm: return "perm";
    case kAttrDims: return "dims";
    case kAttrDtype: return "dtype";
    case kAttrEps: return "eps";
    case kAttrValue: return "value";
    case kAttrApproximate: return "approximate";
  }
  return "?";
}

bool is_pointwise(OpClass c) {
  switch (c) {
    case OpClass::kUnary:
    case OpClass::kCast:
    case OpClass::kNot:
    case OpClass::kArith:
    case OpClass::kLogical:
    case OpClass::kCompare:
    case OpClass::kWhere: return true;
    SJ_ALONG_AXES_CLASSES(SJ_CLASS_CASE)
    SJ_VIEW_CLASSES(SJ_CLASS_CASE)
    SJ_INDEXING_CLASSES(SJ_CLASS_CASE)
    SJ_SYM_CLASSES(SJ_CLASS_CASE)
    case OpClass::kMatmul: return false;
  }
  return false;
}

}  // namespace shapejit::ir
