// A matmul step's shape on a call (backends/loops/loop_ir.h): which trailing
// batch dims one strided-batched product covers (the CUDA backend's cuBLAS
// call; the dims before them are its loop). On an H200, attention's
// [batch, heads] as 32 calls of 12 each cost the encoder 4 ms a call.
#include <gtest/gtest.h>

#include "backends/loops/loop_ir.h"

namespace shapejit::backends::loops {
namespace {

// A [batch..., 5, 7] @ [batch..., 7, 4] product with the given per-dim
// batch sizes and operand strides (elements).
MatmulShape shape_of(std::vector<int64_t> batch, std::vector<int64_t> a_strides, std::vector<int64_t> b_strides) {
  MatmulStep mm;
  mm.c = 2;
  mm.m = 5, mm.n = 4, mm.k = 7;
  for (size_t i = 0; i < batch.size(); ++i) {
    mm.batch.push_back(sym::Expr(batch[i]));
    mm.a.batch_strides.push_back(sym::Expr(a_strides[i]));
    mm.b.batch_strides.push_back(sym::Expr(b_strides[i]));
  }
  mm.a.row_stride = 7;
  mm.b.row_stride = 4;
  return MatmulShape(mm, std::span<const int64_t>{});
}

TEST(MatmulShape, TrailingBatchDimsWhoseStridesComposeAreOneBatch) {
  // Dense operands: [2, 3] batch dims are one batch of 6.
  EXPECT_EQ(shape_of({2, 3}, {3 * 35, 35}, {3 * 28, 28}).strided_batch_start(INT32_MAX), 0u);
  // b broadcast over both (strides 0): still one batch.
  EXPECT_EQ(shape_of({2, 3}, {3 * 35, 35}, {0, 0}).strided_batch_start(INT32_MAX), 0u);
  // a broadcast along the last dim only, b along the first: no merge.
  EXPECT_EQ(shape_of({2, 3}, {35, 0}, {0, 28}).strided_batch_start(INT32_MAX), 1u);
  // A gap in a's layout (a padded batch stride): no merge.
  EXPECT_EQ(shape_of({2, 3}, {4 * 35, 35}, {3 * 28, 28}).strided_batch_start(INT32_MAX), 1u);
  // Three dims, the last two composing.
  EXPECT_EQ(shape_of({4, 2, 3}, {999, 3 * 35, 35}, {999, 3 * 28, 28}).strided_batch_start(INT32_MAX), 1u);
  // The batch bound (cuBLAS counts in int): 6 > 5.
  EXPECT_EQ(shape_of({2, 3}, {3 * 35, 35}, {3 * 28, 28}).strided_batch_start(5), 1u);
  // No batch dim.
  EXPECT_EQ(shape_of({}, {}, {}).strided_batch_start(INT32_MAX), 0u);
  // The offsets of the loop's matrices over the dims before the batch.
  const MatmulShape s = shape_of({4, 2, 3}, {999, 3 * 35, 35}, {0, 3 * 28, 28});
  EXPECT_EQ(s.offsets(3, s.strided_batch_start(INT32_MAX)), (std::pair<int64_t, int64_t>{3 * 999, 0}));
}

}  // namespace
}  // namespace shapejit::backends::loops
