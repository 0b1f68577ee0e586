// The vector types of the CPU backend's hand-written kernels: AVX2's for
// the GEMM's tiles and one query row's attention products, AVX-512's for
// a row times a matrix (Simd512, below). One vector type per element type,
// and the handful of operations those kernels take. Only functions
// compiled for AVX2 and FMA (SJ_AVX2) may call the first, and only where
// gemm_available() said the host has both.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

// The kernels' functions only are compiled for AVX2 and FMA (a target
// attribute, not a flag for the file: a flag would also compile the
// standard library's templates instantiated there for AVX2, and the linker
// may keep those copies for the whole program).
#define SJ_AVX2 __attribute__((target("avx2,fma")))

namespace shapejit::backends::cpu {

template <typename T>
struct Simd;

template <>
struct Simd<float> {
  using V = __m256;
  static constexpr int kLanes = 8;
  SJ_AVX2 static V zero() { return _mm256_setzero_ps(); }
  SJ_AVX2 static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  SJ_AVX2 static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  SJ_AVX2 static V splat(const float* p) { return _mm256_broadcast_ss(p); }
  SJ_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  SJ_AVX2 static V add(V a, V b) { return _mm256_add_ps(a, b); }
  SJ_AVX2 static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  // The first n lanes (0 <= n <= kLanes) set, for masked loads and stores,
  // which neither read nor fault on the others.
  SJ_AVX2 static __m256i first(int64_t n) {
    static const int32_t kOnes[16] = {-1, -1, -1, -1, -1, -1, -1, -1};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + kLanes - n));
  }
  SJ_AVX2 static V load_first(const float* p, __m256i m) { return _mm256_maskload_ps(p, m); }
  SJ_AVX2 static void store_first(float* p, __m256i m, V v) { _mm256_maskstore_ps(p, m, v); }
  // Lane i: the sum of the lanes of a[i].
  SJ_AVX2 static V sums(const V (&a)[kLanes]) {
    const V t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]), t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    const V u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);  // per 128-bit half: the four quarter sums of a[0..3], a[4..7]
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
  }
};

template <>
struct Simd<double> {
  using V = __m256d;
  static constexpr int kLanes = 4;
  SJ_AVX2 static V zero() { return _mm256_setzero_pd(); }
  SJ_AVX2 static V loadu(const double* p) { return _mm256_loadu_pd(p); }
  SJ_AVX2 static void storeu(double* p, V v) { _mm256_storeu_pd(p, v); }
  SJ_AVX2 static V splat(const double* p) { return _mm256_broadcast_sd(p); }
  SJ_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  SJ_AVX2 static V add(V a, V b) { return _mm256_add_pd(a, b); }
  SJ_AVX2 static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  SJ_AVX2 static __m256i first(int64_t n) {
    static const int64_t kOnes[8] = {-1, -1, -1, -1};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + kLanes - n));
  }
  SJ_AVX2 static V load_first(const double* p, __m256i m) { return _mm256_maskload_pd(p, m); }
  SJ_AVX2 static void store_first(double* p, __m256i m, V v) { _mm256_maskstore_pd(p, m, v); }
  SJ_AVX2 static V sums(const V (&a)[kLanes]) {
    const V t0 = _mm256_hadd_pd(a[0], a[1]), t1 = _mm256_hadd_pd(a[2], a[3]);  // per half: the half sums of a[0], a[1], a[2], a[3]
    return _mm256_add_pd(_mm256_permute2f128_pd(t0, t1, 0x20), _mm256_permute2f128_pd(t0, t1, 0x31));
  }
};

// AVX-512's vectors, for the kernels that gain from its 32 registers (a
// row times a matrix, row_product.h; the GEMM's wide tiles, gemm.cpp):
// functions compiled for it (SJ_AVX512) call these, where the host has it
// (row_product_available(), tile_choice.h).
#define SJ_AVX512 __attribute__((target("avx512f,avx2,fma")))

template <typename T>
struct Simd512;

template <>
struct Simd512<float> {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  SJ_AVX512 static V zero() { return _mm512_setzero_ps(); }
  SJ_AVX512 static V splat(float x) { return _mm512_set1_ps(x); }
  SJ_AVX512 static V splat(const float* p) { return _mm512_set1_ps(*p); }
  SJ_AVX512 static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  SJ_AVX512 static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  // The first n lanes (0 <= n <= kLanes).
  static Mask first(int64_t n) { return static_cast<Mask>((1u << n) - 1); }
  SJ_AVX512 static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  SJ_AVX512 static V add(V a, V b) { return _mm512_add_ps(a, b); }
  // The lanes `m` sets, zero in the others, which are neither read nor
  // fault.
  SJ_AVX512 static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  SJ_AVX512 static void store(float* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
};

template <>
struct Simd512<double> {
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  SJ_AVX512 static V zero() { return _mm512_setzero_pd(); }
  SJ_AVX512 static V splat(double x) { return _mm512_set1_pd(x); }
  SJ_AVX512 static V splat(const double* p) { return _mm512_set1_pd(*p); }
  SJ_AVX512 static V loadu(const double* p) { return _mm512_loadu_pd(p); }
  SJ_AVX512 static void storeu(double* p, V v) { _mm512_storeu_pd(p, v); }
  static Mask first(int64_t n) { return static_cast<Mask>((1u << n) - 1); }
  SJ_AVX512 static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  SJ_AVX512 static V add(V a, V b) { return _mm512_add_pd(a, b); }
  SJ_AVX512 static V load(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  SJ_AVX512 static void store(double* p, Mask m, V v) { _mm512_mask_storeu_pd(p, m, v); }
};

}  // namespace shapejit::backends::cpu

#endif
