// The products of the LLVM backend's matmul and attention steps: how their
// operands reach BLAS (a transpose flag and a leading dimension; a row or
// a column as a matrix-vector product; short ragged blocks padded) and the
// backend's GEMM (gemm.h), whose B is packed per task, once per call for
// all tasks, or once while it lies in frozen memory (backends/frozen.h).
#pragma once

#include <cblas.h>

#include <cstdint>
#include <memory>

#include "backends/loops/loop_ir.h"

namespace shapejit::backends::cpu {

// A product of at most kStreamRows rows streams B (multiply_streaming:
// it reads B once, and packing all of it first cost as much as the
// products); a taller one packs B once for all its blocks.
constexpr int64_t kStreamRows = 96;

// Whether a product of B (k x n, elements of `element_bytes`) runs on the
// backend's GEMM, not BLAS: the host has AVX2 and FMA, and B is small
// enough (kOwnGemmMaxB, products.cpp).
bool own_gemm(int64_t k, int64_t n, size_t element_bytes);

// How BLAS reads a row-major operand of `rows` x `cols` with these strides:
// transposed when its rows are the contiguous ones (lowering saw to it that
// rows or columns are). The leading dimension of a single row is never
// read, but BLAS still wants it at least the row's width.
struct BlasOperand {
  CBLAS_TRANSPOSE trans;
  int ld;
};
BlasOperand blas_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

// Whether every batch matrix reads the same B and A's rows, not transposed,
// are evenly spaced through the batch (matrix i + 1 starts m rows after i).
bool shares_b(const loops::MatmulShape& s);

// C = A B + beta C, row-major, in the operands' precision; a product with
// one row or one column is a matrix-vector product.
template <typename T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const T* a, int lda, const T* b, int ldb, T beta,
               T* c, int ldc);

// In what follows, B's elements are of type S, the product's of T: where
// they differ (a float32 weight in a float64 product, a cast the lowering
// folded into the operand), B is packed in its own type and converted as
// the GEMM's tiles load it, never by BLAS.

// C (m x n, ldc) = A B, or += when `accumulate`, by multiply, with B
// (element (p, j) at b[p * b_row + j * b_col]) packed here, or streamed.
template <typename T, typename S>
void multiply_packing(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row,
                      int64_t b_col, T* c, int64_t ldc, bool accumulate);

// B (k x n, as `shape` strides it) packed once for every task of the call,
// into the calling thread's buffer, its rows split across threads when
// `parallel`.
template <typename T, typename S>
const S* pack_shared(int64_t k, int64_t n, const S* b, const loops::MatmulShape& shape, bool parallel);

// B's panels kept across calls (FrozenMemory::derived) when B lies in
// frozen memory, else null.
template <typename T, typename S>
std::shared_ptr<const void> frozen_panels(int64_t k, int64_t n, const S* b, const loops::MatmulShape& shape, bool parallel);

// C (rows x cols, leading dimension ldc) = A B, A and B as `shape` strides
// them: multiply when `own` (always when B converts), from `packed` (B's
// panels from this block's first column) or from panels packed here when
// it is null; a single row times a row-major B of at most
// kSpillingPassColumns columns (a block of them) by row_times_matrix where the
// host has AVX-512, else BLAS's matrix-vector product for one row or
// column.
template <typename T, typename S>
void product(int64_t rows, int64_t cols, int64_t k, const T* a, const S* b, T* c, int64_t ldc, const loops::MatmulShape& shape,
             bool own, const S* packed);

}  // namespace shapejit::backends::cpu
