#include "backends/cpu/row_product.h"

#include <algorithm>
#include <array>
#include <utility>

#include "backends/cpu/gemm.h"
#include "backends/cpu/simd.h"

namespace shapejit::backends::cpu {

bool row_product_available() {
#if defined(__x86_64__)
  static const bool ok = gemm_available() && __builtin_cpu_supports("avx512f");  // gemm_available() ran __builtin_cpu_init()
  return ok;
#else
  return false;
#endif
}

#if defined(__x86_64__)

namespace {

// Accumulators of a pass (kRowPassColumns): 24 of the 32 registers, beside
// the vectors of B being loaded and the broadcast element of a.
constexpr int kMaxVectors = 24;
static_assert(kRowPassColumns<float> == kMaxVectors * Simd512<float>::kLanes && kRowPassColumns<double> == kMaxVectors * Simd512<double>::kLanes);

// c[0, NV vectors) (+)= a B[:, 0, NV vectors), B's rows read one after
// another; the last vector takes the lanes `last` sets (B's last few
// columns), the others all of theirs. A pass of fewer than 8 vectors takes
// PH rows at a time into PH sets of accumulators, added at the end, so
// that at least 8 chains of multiply-adds cover their latency.
template <typename T, int NV>
SJ_AVX512 void pass(int64_t k, const T* a, int64_t a_col, const T* b, int64_t b_row, T* c, bool accumulate, typename Simd512<T>::Mask last) {
  using Vec = Simd512<T>;
  using Mask = typename Vec::Mask;
  constexpr int L = Vec::kLanes, PH = (8 + NV - 1) / NV;
  const Mask all = static_cast<Mask>(~Mask{0});
  typename Vec::V acc[NV * PH];
#pragma GCC unroll 24
  for (int i = 0; i < NV * PH; ++i) acc[i] = Vec::zero();
  int64_t p = 0;
  for (; p + PH <= k; p += PH) {
#pragma GCC unroll 8
    for (int ph = 0; ph < PH; ++ph) {
      const typename Vec::V x = Vec::splat(a[(p + ph) * a_col]);
      const T* row = b + (p + ph) * b_row;
#pragma GCC unroll 24
      for (int v = 0; v < NV; ++v) acc[ph * NV + v] = Vec::fma(x, Vec::load(row + v * L, v + 1 < NV ? all : last), acc[ph * NV + v]);
    }
  }
  for (; p < k; ++p) {
    const typename Vec::V x = Vec::splat(a[p * a_col]);
    const T* row = b + p * b_row;
#pragma GCC unroll 24
    for (int v = 0; v < NV; ++v) acc[v] = Vec::fma(x, Vec::load(row + v * L, v + 1 < NV ? all : last), acc[v]);
  }
#pragma GCC unroll 8
  for (int ph = 1; ph < PH; ++ph) {
#pragma GCC unroll 24
    for (int v = 0; v < NV; ++v) acc[v] = Vec::add(acc[v], acc[ph * NV + v]);
  }
#pragma GCC unroll 24
  for (int v = 0; v < NV; ++v) {
    const Mask m = v + 1 < NV ? all : last;
    Vec::store(c + v * L, m, accumulate ? Vec::add(acc[v], Vec::load(c + v * L, m)) : acc[v]);
  }
}

// c[0, n) (+)= a B for kRowPassColumns < n <= 2 kRowPassColumns, B's rows
// read one after another at their full width, one stream as in a pass: the
// first 24 vectors of columns accumulate in registers, the rest in c
// itself, which stays in L1 (a load, a multiply-add and a store a vector
// of each row). Two passes would read each row in two pieces a row's
// stride apart, two rows at a time two streams; either was slower than
// sgemv, and this is faster (row_product.h).
template <typename T>
SJ_AVX512 void spilling_pass(int64_t n, int64_t k, const T* a, int64_t a_col, const T* b, int64_t b_row, T* c, bool accumulate) {
  using Vec = Simd512<T>;
  using Mask = typename Vec::Mask;
  constexpr int L = Vec::kLanes, NV = kMaxVectors;
  const Mask all = static_cast<Mask>(~Mask{0});
  const int64_t spilled = n - NV * L, sv = (spilled + L - 1) / L;
  const Mask last = static_cast<Mask>((uint32_t{1} << (spilled - (sv - 1) * L)) - 1);
  T* const cs = c + NV * L;
  if (!accumulate) {
    for (int64_t v = 0; v < sv; ++v) Vec::store(cs + v * L, v + 1 < sv ? all : last, Vec::zero());
  }
  typename Vec::V acc[NV];
#pragma GCC unroll 24
  for (int v = 0; v < NV; ++v) acc[v] = Vec::zero();
  for (int64_t p = 0; p < k; ++p) {
    const typename Vec::V x = Vec::splat(a[p * a_col]);
    const T* row = b + p * b_row;
#pragma GCC unroll 24
    for (int v = 0; v < NV; ++v) acc[v] = Vec::fma(x, Vec::load(row + v * L, all), acc[v]);
    const T* rest = row + NV * L;
    for (int64_t v = 0; v < sv; ++v) {
      const Mask m = v + 1 < sv ? all : last;
      Vec::store(cs + v * L, m, Vec::fma(x, Vec::load(rest + v * L, m), Vec::load(cs + v * L, m)));
    }
  }
#pragma GCC unroll 24
  for (int v = 0; v < NV; ++v) Vec::store(c + v * L, all, accumulate ? Vec::add(acc[v], Vec::load(c + v * L, all)) : acc[v]);
}

template <typename T>
using PassFn = void (*)(int64_t, const T*, int64_t, const T*, int64_t, T*, bool, typename Simd512<T>::Mask);

template <typename T, int... I>
constexpr std::array<PassFn<T>, sizeof...(I)> make_passes(std::integer_sequence<int, I...>) {
  return {pass<T, I + 1>...};
}

// kPasses<T>[v - 1]: the pass of v vectors.
template <typename T>
constexpr std::array<PassFn<T>, kMaxVectors> kPasses = make_passes<T>(std::make_integer_sequence<int, kMaxVectors>{});

}  // namespace

template <typename T>
void row_times_matrix(int64_t n, int64_t k, const T* a, int64_t a_col, const T* b, int64_t b_row, T* c, bool accumulate) {
  using Mask = typename Simd512<T>::Mask;
  constexpr int64_t L = Simd512<T>::kLanes;
  if (n > kRowPassColumns<T> && n <= kSpillingPassColumns<T>) return spilling_pass(n, k, a, a_col, b, b_row, c, accumulate);
  // Passes of equal width: a row of 400 floats (25 vectors) is two passes
  // of 13 and 12 vectors, not 24 and 1.
  const int64_t vectors = (n + L - 1) / L, passes = (vectors + kMaxVectors - 1) / kMaxVectors, per = vectors > 0 ? (vectors + passes - 1) / passes : 1;
  for (int64_t v0 = 0; v0 < vectors; v0 += per) {
    const int64_t count = std::min(per, vectors - v0), j0 = v0 * L, tail = std::min(L, n - j0 - (count - 1) * L);
    const Mask last = static_cast<Mask>((uint32_t{1} << tail) - 1);
    kPasses<T>[static_cast<size_t>(count - 1)](k, a, a_col, b + j0, b_row, c + j0, accumulate, last);
  }
}

#else

// Off x86-64 row_product_available() is false and nothing calls this; the
// same sum in plain loops, so that the backend links there.
template <typename T>
void row_times_matrix(int64_t n, int64_t k, const T* a, int64_t a_col, const T* b, int64_t b_row, T* c, bool accumulate) {
  for (int64_t j = 0; j < n; ++j) {
    T s = accumulate ? c[j] : T(0);
    for (int64_t p = 0; p < k; ++p) s += a[p * a_col] * b[p * b_row + j];
    c[j] = s;
  }
}

#endif

template void row_times_matrix<float>(int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*, bool);
template void row_times_matrix<double>(int64_t, int64_t, const double*, int64_t, const double*, int64_t, double*, bool);

}  // namespace shapejit::backends::cpu
