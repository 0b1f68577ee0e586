// The op lists switches over Op are written with (ops.h): each op in
// exactly one, and each list's ops of the class it is named for.
#include "core/ir/ops.h"

#include <gtest/gtest.h>

#include <vector>

namespace shapejit::ir {
namespace {

constexpr size_t kOps = kNumOps;

TEST(OpLists, EveryOpIsListedOnce) {
  std::vector<int> seen(kOps, 0);
#define SJ_SEE(op) ++seen[static_cast<size_t>(Op::op)];
  SJ_ALL_OPS(SJ_SEE)
#undef SJ_SEE
  for (size_t i = 0; i < kOps; ++i) EXPECT_EQ(seen[i], 1) << op_name(static_cast<Op>(i));
}

void expect_class(std::vector<Op> ops, OpClass cls, const char* list) {
  for (Op op : ops) EXPECT_EQ(op_info(op).cls, cls) << op_name(op) << " is in " << list;
}

TEST(OpLists, EachListHoldsItsClass) {
#define SJ_OP(op) Op::op,
  expect_class({SJ_UNARY_OPS(SJ_OP)}, OpClass::kUnary, "SJ_UNARY_OPS");
  expect_class({SJ_ARITH_OPS(SJ_OP)}, OpClass::kArith, "SJ_ARITH_OPS");
  expect_class({SJ_LOGICAL_OPS(SJ_OP)}, OpClass::kLogical, "SJ_LOGICAL_OPS");
  expect_class({SJ_COMPARE_OPS(SJ_OP)}, OpClass::kCompare, "SJ_COMPARE_OPS");
  expect_class({SJ_REDUCE_OPS(SJ_OP)}, OpClass::kReduce, "SJ_REDUCE_OPS");
  expect_class({SJ_SCAN_OPS(SJ_OP)}, OpClass::kScan, "SJ_SCAN_OPS");
  expect_class({SJ_SOFTMAX_OPS(SJ_OP)}, OpClass::kSoftmax, "SJ_SOFTMAX_OPS");
  expect_class({SJ_INDEX_PUT_OPS(SJ_OP)}, OpClass::kIndexPut, "SJ_INDEX_PUT_OPS");
  expect_class({SJ_SYM_BINARY_OPS(SJ_OP)}, OpClass::kSymBinary, "SJ_SYM_BINARY_OPS");
  for (Op op : {SJ_POINTWISE_OPS(SJ_OP)}) EXPECT_TRUE(is_pointwise(op_info(op).cls)) << op_name(op);
#undef SJ_OP
  // The other lists are of classes with one op each, named by the op.
  const std::vector<std::pair<Op, OpClass>> single = {
      {Op::kCast, OpClass::kCast},           {Op::kNot, OpClass::kNot},
      {Op::kWhere, OpClass::kWhere},         {Op::kArgmax, OpClass::kArgmax},
      {Op::kLayerNorm, OpClass::kLayerNorm}, {Op::kRmsNorm, OpClass::kRmsNorm},
      {Op::kMatmul, OpClass::kMatmul},       {Op::kReshape, OpClass::kReshape},
      {Op::kPermute, OpClass::kPermute},     {Op::kTranspose, OpClass::kTranspose},
      {Op::kExpand, OpClass::kExpand},       {Op::kSlice, OpClass::kSlice},
      {Op::kConcat, OpClass::kConcat},       {Op::kSqueeze, OpClass::kSqueeze},
      {Op::kUnsqueeze, OpClass::kUnsqueeze}, {Op::kIndexSelect, OpClass::kIndexSelect},
      {Op::kEmbedding, OpClass::kEmbedding}, {Op::kFull, OpClass::kFull},
      {Op::kArange, OpClass::kArange},       {Op::kNonzero, OpClass::kNonzero},
      {Op::kMaskedSelect, OpClass::kMaskedSelect}, {Op::kSymSize, OpClass::kSymSize},
  };
  for (const auto& [op, cls] : single) EXPECT_EQ(op_info(op).cls, cls) << op_name(op);
}

}  // namespace
}  // namespace shapejit::ir
