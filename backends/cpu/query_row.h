// The two products of an attention step that has a single query row (a
// decode step) over keys and values whose rows are contiguous (a key/value
// cache): the row's score against each key, and the values weighted by the
// row's probabilities, which BLAS takes as matrix-vector products, slower
// for a head's few columns (cpu_kernels_bench's BM_QueryRowVsSgemv;
// bench/results/README.md, "Design measurements").
#pragma once

#include <cstdint>

namespace shapejit::backends::cpu {

// s[j] = q . k_j for j < keys, where key j's d elements lie at
// k + j * key_stride. Needs gemm_available().
template <typename T>
void key_dots(int64_t keys, int64_t d, const T* q, const T* k, int64_t key_stride, T* s);

// acc[x] += sum over j < keys of w[j] * v_j[x], for x < dv, where value j's
// dv elements lie at v + j * row. Needs gemm_available().
template <typename T>
void add_weighted_rows(int64_t keys, int64_t dv, const T* w, const T* v, int64_t row, T* acc);

// Row r of x (rows of n elements, `stride` apart) times f[r], or times
// 1 / f[r] with `reciprocal`: the attention runner's rescaling of its
// accumulators and its division by the rows' sums, at a vector a step
// (compiled for AVX2 where the host has it, like the kernels above).
template <typename T>
void scale_rows(int64_t rows, int64_t n, const T* f, bool reciprocal, T* x, int64_t stride);

}  // namespace shapejit::backends::cpu
