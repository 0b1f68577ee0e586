// A single row times a row-major matrix (c = a B, B k x n): a decode
// step's projections, each of which reads a layer's weights once for one
// token, so that the product runs at the speed B streams from L3 or
// memory, not at the speed of its multiply-adds.
//
// OpenBLAS takes it as sgemv on B's transpose. Here B is read one row
// after another, as it lies, each row's columns multiplied into
// accumulators that stay in registers for the whole of k: AVX-512's 32
// registers hold 24 vectors of them, kRowPassColumns (384 floats), so that
// a B of up to that many columns is read as one sequential stream, where
// sgemv keeps the sums in memory.
//
// A B of up to twice as many columns (kSpillingPassColumns) is read the
// same way, row after row at its full width: the first 384 columns'
// accumulators stay in registers, the rest live in c, in L1. Other ways of
// reading such a B were slower than sgemv: two passes of 384 columns (each
// reads every row's half a row's stride from the last), or two rows at a
// time (two streams); so were wider Bs spilling to c, so wider products go
// to BLAS (products.cpp); row_times_matrix takes them in passes of equal
// width, each over all of k. cpu_kernels_bench's BM_RowProductsVsSgemv
// measures a decode step's products both ways (bench/results/README.md,
// "Design measurements").
#pragma once

#include <cstdint>

namespace shapejit::backends::cpu {

// Columns of B that one pass holds in registers: 24 vectors of T.
template <typename T>
constexpr int64_t kRowPassColumns = 24 * 64 / static_cast<int64_t>(sizeof(T));
// Columns of B read at full width, those past kRowPassColumns summed in c.
template <typename T>
constexpr int64_t kSpillingPassColumns = 2 * kRowPassColumns<T>;

// Whether the host has AVX-512 (row_times_matrix's only kernel); where it
// has not, single rows go to BLAS.
bool row_product_available();

// c[j] = sum over p < k of a[p * a_col] * b[p * b_row + j], for j < n, or
// c[j] += that when `accumulate`. c overlaps neither a nor b (a spilling
// pass writes c before it has read all of a). Needs row_product_available().
template <typename T>
void row_times_matrix(int64_t n, int64_t k, const T* a, int64_t a_col, const T* b, int64_t b_row, T* c, bool accumulate);

}  // namespace shapejit::backends::cpu
