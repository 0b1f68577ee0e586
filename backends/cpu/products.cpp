#include "backends/cpu/products.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/frozen.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/row_product.h"
#include "backends/cpu/huge_pages.h"
#include "backends/cpu/query_row.h"
#include "core/ir/strided.h"

namespace shapejit::backends::cpu {

namespace {

// Blocks of up to kMaxPaddedRows rows are padded to a multiple of
// kRowMultiple rows (blas_product, below).
constexpr int64_t kRowMultiple = 4, kMaxPaddedRows = 256;
// The backend's GEMM takes products whose B is at most kOwnGemmMaxB bytes;
// OpenBLAS larger ones: the GEMM streams its packed B from L3 once per
// block of 96 rows, where OpenBLAS's blocking for L2 wins
// (cpu_kernels_bench's BM_GemmVsOpenBlas measures the crossing).
constexpr int64_t kOwnGemmMaxB = int64_t{4} << 20;
// Rows of B per task of a parallel pack.
constexpr int64_t kPackGrainRows = 64;

// y = A x + beta y, A row-major (rows x cols, lda) or its transpose.
void gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, const float* a, int lda, const float* x, int incx, float beta, float* y, int incy) {
  cblas_sgemv(CblasRowMajor, t, static_cast<int>(rows), static_cast<int>(cols), 1.0f, a, lda, x, incx, beta, y, incy);
}
void gemv(CBLAS_TRANSPOSE t, int64_t rows, int64_t cols, const double* a, int lda, const double* x, int incx, double beta, double* y, int incy) {
  cblas_dgemv(CblasRowMajor, t, static_cast<int>(rows), static_cast<int>(cols), 1.0, a, lda, x, incx, beta, y, incy);
}

// Panels of B packed for multiply, grown to the largest product seen
// and kept per thread, one buffer per use: kShared for the product a call
// packs before its tasks (on the calling thread, which may run a task
// while it waits), kTask for a task that packs its own matrix's B.
enum class Panels { kShared, kTask };
template <typename T, Panels use>
T* panels(int64_t size) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < static_cast<size_t>(size)) buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}

// B (k x n, as `shape` strides it) packed for multiply into `out`,
// its rows split across threads when `parallel` (pack says why rows).
template <typename T, typename S>
void pack_all(int64_t k, int64_t n, const S* b, const loops::MatmulShape& shape, bool parallel, S* out) {
  if (!parallel) return pack<T>(k, n, b, shape.b_row, shape.b_col, out, 0, k);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, k, kPackGrainRows), [&](const tbb::blocked_range<int64_t>& r) {
    pack<T>(k, n, b, shape.b_row, shape.b_col, out, r.begin(), r.end());
  });
}

}  // namespace

bool own_gemm(int64_t k, int64_t n, size_t element_bytes) {
  return gemm_available() && k * n * static_cast<int64_t>(element_bytes) <= kOwnGemmMaxB;
}

BlasOperand blas_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if (col_stride == 1 || cols == 1) return {CblasNoTrans, static_cast<int>(rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride)};
  return {CblasTrans, static_cast<int>(col_stride)};
}

bool shares_b(const loops::MatmulShape& s) {
  if (s.a_col != 1 && s.k > 1) return false;
  int64_t expect = s.m * s.a_row;
  for (size_t i = s.batch.size(); i-- > 0;) {
    if (s.batch[i] == 1) continue;
    if (s.b_stride[i] != 0 || s.a_stride[i] != expect) return false;
    expect *= s.batch[i];
  }
  return true;
}

// One row or one column is a matrix-vector product (gemv): OpenBLAS's gemm
// packs its matrix first, and a decode step spent a quarter of its time
// (cache 4096, one thread) packing keys for 1 x 16 by 16 x 4096 scores.
template <typename T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const T* a, int lda, const T* b, int ldb, T beta,
               T* c, int ldc) {
  if (m == 1 && k > 0) {  // c = a B: B's transpose times a's row
    const int inc_a = ta == CblasNoTrans ? 1 : lda;
    if (tb == CblasNoTrans) gemv(CblasTrans, k, n, b, ldb, a, inc_a, beta, c, 1);
    else gemv(CblasNoTrans, n, k, b, ldb, a, inc_a, beta, c, 1);
    return;
  }
  if (n == 1 && k > 0) {  // c = A b, down C's column
    const int inc_b = tb == CblasNoTrans ? ldb : 1;
    if (ta == CblasNoTrans) gemv(CblasNoTrans, m, k, a, lda, b, inc_b, beta, c, ldc);
    else gemv(CblasTrans, k, m, a, lda, b, inc_b, beta, c, ldc);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a, lda, b, ldb, beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a, lda, b, ldb, beta, c, ldc);
  }
}

namespace {

// C (rows x cols, leading dimension ldc) = A B by BLAS, A and B as `shape`
// strides them. OpenBLAS computes a row-major product as the column-major one of
// the transposes, so our rows are its columns, which its kernels take 4 at
// a time: a count of rows not a multiple of 4 goes through its slower edge
// code (a 31-token sentence would cost more than a 32-token one).
// Short, ragged blocks of contiguous rows are therefore padded with zero
// rows in a scratch copy and their product copied back; a single row is a
// matrix-vector product (blas_gemm), which has no edge code.
template <typename T>
void blas_product(int64_t rows, int64_t cols, int64_t k, const T* a, const T* b, T* c, int64_t ldc, const loops::MatmulShape& shape) {
  const BlasOperand ob = blas_operand(k, cols, shape.b_row, shape.b_col);
  const int64_t padded = (rows + kRowMultiple - 1) / kRowMultiple * kRowMultiple;
  if (padded == rows || rows == 1 || rows > kMaxPaddedRows || (shape.a_col != 1 && k > 1)) {
    const BlasOperand oa = blas_operand(rows, k, shape.a_row, shape.a_col);
    blas_gemm(oa.trans, ob.trans, rows, cols, k, a, oa.ld, b, ob.ld, T(0), c, static_cast<int>(ldc));
    return;
  }
  thread_local std::vector<T> pa, pc;
  pa.assign(static_cast<size_t>(padded * k), T(0));
  pc.resize(static_cast<size_t>(padded * cols));
  for (int64_t r = 0; r < rows; ++r) std::copy(a + r * shape.a_row, a + r * shape.a_row + k, pa.begin() + r * k);
  blas_gemm(CblasNoTrans, ob.trans, padded, cols, k, pa.data(), static_cast<int>(k), b, ob.ld, T(0), pc.data(), static_cast<int>(cols));
  for (int64_t r = 0; r < rows; ++r) std::copy(pc.begin() + r * cols, pc.begin() + (r + 1) * cols, c + r * ldc);
}

}  // namespace

template <typename T, typename S>
void multiply_packing(int64_t m, int64_t n, int64_t k, const T* a, int64_t a_row, int64_t a_col, const S* b, int64_t b_row,
                      int64_t b_col, T* c, int64_t ldc, bool accumulate) {
  if (m <= kStreamRows) return multiply_streaming(m, n, k, a, a_row, a_col, b, b_row, b_col, c, ldc, accumulate);
  S* packed = panels<S, Panels::kTask>(packed_size<T>(k, n));
  pack<T>(k, n, b, b_row, b_col, packed, int64_t{0}, k);
  multiply(m, n, k, a, a_row, a_col, packed, c, ldc, accumulate);
}

template <typename T, typename S>
const S* pack_shared(int64_t k, int64_t n, const S* b, const loops::MatmulShape& shape, bool parallel) {
  S* out = panels<S, Panels::kShared>(packed_size<T>(k, n));
  pack_all<T>(k, n, b, shape, parallel, out);
  return out;
}

// The kept panels are 64-byte aligned, on huge pages where the system has
// them (pool/huge_pages.h), since a model's pass reads them all from
// memory. Panels for a float64 product of a float32 B (8 columns) are kept
// apart from those of a float32 product of the same B (16 columns): the
// tag names both types.
template <typename T, typename S>
std::shared_ptr<const void> frozen_panels(int64_t k, int64_t n, const S* b, const loops::MatmulShape& shape, bool parallel) {
  if (!FrozenMemory::process().any()) return nullptr;
  const int64_t dims[] = {k, n}, strides[] = {shape.b_row, shape.b_col};
  const auto [lo, hi] = ir::offset_span(dims, strides);
  auto name = [](bool f32) { return f32 ? "f32 " : "f64 "; };
  const std::string tag = std::string("gemm panels ") + name(std::is_same_v<T, float>) +
                          (std::is_same_v<T, S> ? "" : std::string("from ") + name(std::is_same_v<S, float>)) + std::to_string(k) + " x " +
                          std::to_string(n) + " strides " + std::to_string(shape.b_row) + " " + std::to_string(shape.b_col);
  return FrozenMemory::process()
      .derived(b + lo, static_cast<size_t>(hi - lo + 1) * sizeof(S), tag,
               [&] {
                 const size_t bytes = static_cast<size_t>(packed_size<T>(k, n)) * sizeof(S);
                 std::shared_ptr<void> out = HugePageHeap::process()->allocate(bytes);
                 if (!out) out.reset(::operator new(bytes, std::align_val_t{64}), [](void* q) { ::operator delete(q, std::align_val_t{64}); });
                 pack_all<T>(k, n, b, shape, parallel, static_cast<S*>(out.get()));
                 return FrozenMemory::Derived{out, bytes};
               })
      .data;
}

template <typename T, typename S>
void product(int64_t rows, int64_t cols, int64_t k, const T* a, const S* b, T* c, int64_t ldc, const loops::MatmulShape& shape,
             bool own, const S* packed) {
  if constexpr (std::is_same_v<T, S>) {
    // A single row reads B once, so it packs none, but reads kept panels
    // (frozen weights) as one stream; as B lies, see row_product.h.
    const bool single = rows == 1 && !packed;
    if (single && shape.b_col == 1 && cols <= kSpillingPassColumns<T> && row_product_available()) {
      return row_times_matrix(cols, k, a, shape.a_col, b, shape.b_row, c, false);
    }
    if (single && shape.b_row == 1 && shape.a_col == 1 && cols > 1 && k > 0 && gemm_available()) {
      return key_dots(cols, k, a, b, shape.b_col, c);
    }
    if (rows == 1 && packed && k > 0 && row_product_available()) {
      constexpr int64_t P = kPanel<T>;
      for (int64_t j0 = 0; j0 < cols; j0 += P) row_times_matrix(std::min(P, cols - j0), k, a, shape.a_col, packed + j0 * k, P, c + j0, false);
      return;
    }
    if (single || cols == 1 || !own) return blas_product(rows, cols, k, a, b, c, ldc, shape);
  }
  if (!packed) {
    return multiply_packing(rows, cols, k, a, shape.a_row, shape.a_col, b, shape.b_row, shape.b_col, c, ldc, false);
  }
  multiply(rows, cols, k, a, shape.a_row, shape.a_col, packed, c, ldc, false);
}

template void blas_gemm<float>(CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int64_t, int64_t, int64_t, const float*, int, const float*, int, float,
                               float*, int);
template void blas_gemm<double>(CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, int64_t, int64_t, int64_t, const double*, int, const double*, int, double,
                                double*, int);
#define SJ_PRODUCTS(T, S)                                                                                                                 \
  template void multiply_packing<T, S>(int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const S*, int64_t, int64_t, T*, int64_t, bool); \
  template const S* pack_shared<T, S>(int64_t, int64_t, const S*, const loops::MatmulShape&, bool);                                        \
  template std::shared_ptr<const void> frozen_panels<T, S>(int64_t, int64_t, const S*, const loops::MatmulShape&, bool);                   \
  template void product<T, S>(int64_t, int64_t, int64_t, const T*, const S*, T*, int64_t, const loops::MatmulShape&, bool, const S*);
SJ_PRODUCTS(float, float)
SJ_PRODUCTS(double, double)
SJ_PRODUCTS(double, float)
SJ_PRODUCTS(float, double)
#undef SJ_PRODUCTS

}  // namespace shapejit::backends::cpu
