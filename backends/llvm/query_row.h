// The two products of an attention step that has a single query row (a
// decode step) over keys and values whose rows are contiguous (a key/value
// cache): the row's score against each key, and the values weighted by the
// row's probabilities. BLAS took both as matrix-vector products: for a
// head of 16 floats over 1025 keys in L2, one thread, 1.89 us for the
// scores against 0.78 here, 1.28 for the values against 0.63 (a decode
// step of the peers' decoder, 4 such heads: 34 us against 40).
#pragma once

#include <cstdint>

namespace shapejit::backends::llvm {

// s[j] = q . k_j for j < keys, where key j's d elements lie at
// k + j * key_stride. Needs gemm_available().
template <typename T>
void key_dots(int64_t keys, int64_t d, const T* q, const T* k, int64_t key_stride, T* s);

// acc[x] += sum over j < keys of w[j] * v_j[x], for x < dv, where value j's
// dv elements lie at v + j * row. Needs gemm_available().
template <typename T>
void add_weighted_rows(int64_t keys, int64_t dv, const T* w, const T* v, int64_t row, T* acc);

}  // namespace shapejit::backends::llvm
