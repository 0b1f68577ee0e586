#include "backends/cpu/query_row.h"

#include <algorithm>

#include "backends/cpu/gemm.h"
#include "backends/cpu/simd.h"

namespace shapejit::backends::cpu {

namespace {

template <typename T>
void scale_rows_plain(int64_t rows, int64_t n, const T* f, bool reciprocal, T* x, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r, x += stride) {
    const T by = reciprocal ? T(1) / f[r] : f[r];
    for (int64_t i = 0; i < n; ++i) x[i] *= by;
  }
}

}  // namespace

#if defined(__x86_64__)

namespace {

// A group of kLanes keys: a vector of multiply-adds per key along d (the
// last, partial vector masked), then the group's kLanes sums at once.
// `rows` are the group's keys.
template <typename T>
SJ_AVX2 inline typename Simd<T>::V group_dots(int64_t d, const T* q, const T* const* rows) {
  using Vec = Simd<T>;
  constexpr int L = Vec::kLanes;
  typename Vec::V acc[L];
#pragma GCC unroll 8
  for (int r = 0; r < L; ++r) acc[r] = Vec::zero();
  int64_t p = 0;
  for (; p + L <= d; p += L) {
    const typename Vec::V x = Vec::loadu(q + p);
#pragma GCC unroll 8
    for (int r = 0; r < L; ++r) acc[r] = Vec::fma(x, Vec::loadu(rows[r] + p), acc[r]);
  }
  if (p < d) {
    const __m256i m = Vec::first(d - p);
    const typename Vec::V x = Vec::load_first(q + p, m);
#pragma GCC unroll 8
    for (int r = 0; r < L; ++r) acc[r] = Vec::fma(x, Vec::load_first(rows[r] + p, m), acc[r]);
  }
  return Vec::sums(acc);
}

template <typename T>
SJ_AVX2 void key_dots_avx2(int64_t keys, int64_t d, const T* q, const T* k, int64_t key_stride, T* s) {
  using Vec = Simd<T>;
  constexpr int L = Vec::kLanes;
  const T* rows[L];
  int64_t j = 0;
  for (; j + L <= keys; j += L) {
    for (int r = 0; r < L; ++r) rows[r] = k + (j + r) * key_stride;
    Vec::storeu(s + j, group_dots(d, q, rows));
  }
  if (j < keys) {  // the last few keys, the group's other rows reading the first key again
    for (int r = 0; r < L; ++r) rows[r] = k + (j + r < keys ? j + r : 0) * key_stride;
    Vec::store_first(s + j, Vec::first(keys - j), group_dots(d, q, rows));
  }
}

// A vector from p, or its lanes that `m` sets (kMasked).
template <typename T, bool kMasked>
SJ_AVX2 inline typename Simd<T>::V load(const T* p, __m256i m) {
  if constexpr (kMasked) {
    return Simd<T>::load_first(p, m);
  } else {
    return Simd<T>::loadu(p);
  }
}

// acc[0, NV vectors) += the weighted rows, the keys taken PH at a time
// into PH sets of accumulators (NV * PH = 8 chains of multiply-adds, to
// cover their latency), the sets added at the end. With kMasked, one
// vector of `m`'s lanes (the values' last few elements); `m` is read only
// then.
template <typename T, int NV, int PH, bool kMasked = false>
SJ_AVX2 void weigh_chunk(int64_t keys, const T* w, const T* v, int64_t row, T* acc, __m256i m) {
  using Vec = Simd<T>;
  constexpr int L = Vec::kLanes;
  typename Vec::V a[NV * PH];
#pragma GCC unroll 8
  for (int i = 0; i < NV * PH; ++i) a[i] = Vec::zero();
  int64_t j = 0;
  for (; j + PH <= keys; j += PH) {
#pragma GCC unroll 8
    for (int ph = 0; ph < PH; ++ph) {
      const typename Vec::V x = Vec::splat(w + j + ph);
      const T* r = v + (j + ph) * row;
#pragma GCC unroll 8
      for (int c = 0; c < NV; ++c) a[ph * NV + c] = Vec::fma(x, load<T, kMasked>(r + c * L, m), a[ph * NV + c]);
    }
  }
  for (; j < keys; ++j) {
    const typename Vec::V x = Vec::splat(w + j);
#pragma GCC unroll 8
    for (int c = 0; c < NV; ++c) a[c] = Vec::fma(x, load<T, kMasked>(v + j * row + c * L, m), a[c]);
  }
#pragma GCC unroll 8
  for (int ph = 1; ph < PH; ++ph) {
#pragma GCC unroll 8
    for (int c = 0; c < NV; ++c) a[c] = Vec::add(a[c], a[ph * NV + c]);
  }
#pragma GCC unroll 8
  for (int c = 0; c < NV; ++c) {
    if constexpr (kMasked) {
      Vec::store_first(acc + c * L, m, Vec::add(a[c], Vec::load_first(acc + c * L, m)));
    } else {
      Vec::storeu(acc + c * L, Vec::add(a[c], Vec::loadu(acc + c * L)));
    }
  }
}

// Each of the values' rows is read once where it is 8 vectors or fewer
// (64 floats); a wider one in chunks of 8 vectors, a pass over the keys
// each.
template <typename T>
SJ_AVX2 void add_weighted_rows_avx2(int64_t keys, int64_t dv, const T* w, const T* v, int64_t row, T* acc) {
  constexpr int L = Simd<T>::kLanes;
  const __m256i all = _mm256_setzero_si256();  // unread
  int64_t x = 0;
  for (; x + 8 * L <= dv; x += 8 * L) weigh_chunk<T, 8, 1>(keys, w, v + x, row, acc + x, all);
  if (x + 4 * L <= dv) weigh_chunk<T, 4, 2>(keys, w, v + x, row, acc + x, all), x += 4 * L;
  if (x + 2 * L <= dv) weigh_chunk<T, 2, 4>(keys, w, v + x, row, acc + x, all), x += 2 * L;
  if (x + L <= dv) weigh_chunk<T, 1, 8>(keys, w, v + x, row, acc + x, all), x += L;
  if (x < dv) weigh_chunk<T, 1, 8, true>(keys, w, v + x, row, acc + x, Simd<T>::first(dv - x));
}

template <typename T>
SJ_AVX2 void scale_rows_avx2(int64_t rows, int64_t n, const T* f, bool reciprocal, T* x, int64_t stride) {
  using Vec = Simd<T>;
  constexpr int L = Vec::kLanes;
  const __m256i tail = Vec::first(n % L);
  for (int64_t r = 0; r < rows; ++r, x += stride) {
    const T by = reciprocal ? T(1) / f[r] : f[r];
    const typename Vec::V s = Vec::splat(&by);
    int64_t i = 0;
    for (; i + L <= n; i += L) Vec::storeu(x + i, Vec::mul(Vec::loadu(x + i), s));
    if (i < n) Vec::store_first(x + i, tail, Vec::mul(Vec::load_first(x + i, tail), s));
  }
}

}  // namespace

template <typename T>
void key_dots(int64_t keys, int64_t d, const T* q, const T* k, int64_t key_stride, T* s) {
  key_dots_avx2(keys, d, q, k, key_stride, s);
}

template <typename T>
void scale_rows(int64_t rows, int64_t n, const T* f, bool reciprocal, T* x, int64_t stride) {
  if (gemm_available()) return scale_rows_avx2(rows, n, f, reciprocal, x, stride);
  scale_rows_plain(rows, n, f, reciprocal, x, stride);
}

template <typename T>
void add_weighted_rows(int64_t keys, int64_t dv, const T* w, const T* v, int64_t row, T* acc) {
  add_weighted_rows_avx2(keys, dv, w, v, row, acc);
}

#else

// No host without AVX2 calls these (gemm_available() is false there); plain
// loops, so that the attention runner links everywhere.
template <typename T>
void key_dots(int64_t keys, int64_t d, const T* q, const T* k, int64_t key_stride, T* s) {
  for (int64_t j = 0; j < keys; ++j) {
    T t = 0;
    for (int64_t p = 0; p < d; ++p) t += q[p] * k[j * key_stride + p];
    s[j] = t;
  }
}

template <typename T>
void add_weighted_rows(int64_t keys, int64_t dv, const T* w, const T* v, int64_t row, T* acc) {
  for (int64_t j = 0; j < keys; ++j) {
    for (int64_t x = 0; x < dv; ++x) acc[x] += w[j] * v[j * row + x];
  }
}

template <typename T>
void scale_rows(int64_t rows, int64_t n, const T* f, bool reciprocal, T* x, int64_t stride) {
  scale_rows_plain(rows, n, f, reciprocal, x, stride);
}

#endif

template void scale_rows<float>(int64_t, int64_t, const float*, bool, float*, int64_t);
template void scale_rows<double>(int64_t, int64_t, const double*, bool, double*, int64_t);
template void key_dots<float>(int64_t, int64_t, const float*, const float*, int64_t, float*);
template void key_dots<double>(int64_t, int64_t, const double*, const double*, int64_t, double*);
template void add_weighted_rows<float>(int64_t, int64_t, const float*, const float*, int64_t, float*);
template void add_weighted_rows<double>(int64_t, int64_t, const double*, const double*, int64_t, double*);

}  // namespace shapejit::backends::cpu
