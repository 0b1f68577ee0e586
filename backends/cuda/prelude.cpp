#include "backends/cuda/codegen.h"

namespace shapejit::backends::cuda {

// The helpers every generated source starts with. NVRTC compiles it with no
// headers: the math functions (expf, erf, ...) are NVRTC built-ins.
const char* prelude() {
  return R"(// shapejit generated CUDA C (backends/cuda): the prelude.
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

#define SJ_INF_F __int_as_float(0x7f800000)
#define SJ_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define SJ_NAN_F __int_as_float(0x7fc00000)
#define SJ_NAN_D __longlong_as_double(0x7ff8000000000000LL)
#define SJ_I64_MIN (-9223372036854775807LL - 1)

// Integer arithmetic wraps, as in the reference (signed overflow is
// undefined in C++, so it goes through unsigned).
__device__ __forceinline__ int sj_add(int a, int b) { return (int)((u32)a + (u32)b); }
__device__ __forceinline__ i64 sj_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ int sj_sub(int a, int b) { return (int)((u32)a - (u32)b); }
__device__ __forceinline__ i64 sj_sub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ int sj_mul(int a, int b) { return (int)((u32)a * (u32)b); }
__device__ __forceinline__ i64 sj_mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ int sj_neg(int a) { return (int)(0u - (u32)a); }
__device__ __forceinline__ i64 sj_neg(i64 a) { return (i64)(0ull - (u64)a); }
__device__ __forceinline__ int sj_abs(int a) { return a < 0 ? sj_neg(a) : a; }
__device__ __forceinline__ i64 sj_abs(i64 a) { return a < 0 ? sj_neg(a) : a; }

// Python's floor division and modulo; x // 0 and x % 0 are 0, x // -1
// wraps.
template <class T> __device__ __forceinline__ T sj_floordiv(T x, T y) {
  if (y == 0) return 0;
  if (y == -1) return sj_neg(x);
  T q = x / y, m = x % y;
  if (m != 0 && (m ^ y) < 0) --q;
  return q;
}
template <class T> __device__ __forceinline__ T sj_mod(T x, T y) {
  if (y == 0 || y == -1) return 0;
  T m = x % y;
  if (m != 0 && (m ^ y) < 0) m += y;
  return m;
}
__device__ __forceinline__ i64 sj_udiv(i64 x, i64 y) { return y == 0 ? 0 : (i64)((u64)x / (u64)y); }
__device__ __forceinline__ i64 sj_umod(i64 x, i64 y) { return y == 0 ? 0 : (i64)((u64)x % (u64)y); }
__device__ __forceinline__ i64 sj_imin(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ i64 sj_imax(i64 a, i64 b) { return a < b ? b : a; }

// x / d for a divisor the same for the whole launch (codegen.cpp's
// launch_invariant): its reciprocal y is computed once, outside the loops,
// and the quotient x * y is corrected by one fma; with y = 1/d correctly
// rounded this is x / d correctly rounded (Markstein), for x and d inside
// the ranges below; outside them, and for 0, infinities and NaN, the
// division itself, out of line so that the compiler does not compute it on
// every path.
__device__ __noinline__ double sj_div_slow(double x, double d) { return x / d; }
__device__ __noinline__ float sj_div_slow(float x, float d) { return x / d; }
__device__ __forceinline__ double sj_div_inv(double x, double d) {
  const double y = 1.0 / d, m = fabs(x), n = fabs(d);
  if (!(m >= 0x1p-900 && m <= 0x1p900 && n >= 0x1p-60 && n <= 0x1p60)) return sj_div_slow(x, d);
  const double q = x * y;
  return fma(fma(-q, d, x), y, q);
}
__device__ __forceinline__ float sj_div_inv(float x, float d) {
  const float y = 1.0f / d, m = fabsf(x), n = fabsf(d);
  if (!(m >= 0x1p-60f && m <= 0x1p60f && n >= 0x1p-30f && n <= 0x1p30f)) return sj_div_slow(x, d);
  const float q = x * y;
  return fmaf(fmaf(-q, d, x), y, q);
}

// Integer power by squaring, wrapping; a negative exponent is a failed check.
__device__ __forceinline__ i64 sj_ipow(i64 base, i64 e) {
  u64 r = 1, b = (u64)base;
  for (u64 k = (u64)e; k; k >>= 1) {
    if (k & 1) r *= b;
    b *= b;
  }
  return (i64)r;
}

// NumPy's gcd: Euclid's on the magnitudes as unsigned, in the element's width.
__device__ __forceinline__ int sj_gcd(int a, int b) {
  unsigned x = a < 0 ? 0u - (unsigned)a : (unsigned)a, y = b < 0 ? 0u - (unsigned)b : (unsigned)b;
  while (x != 0) {
    const unsigned r = y % x;
    y = x;
    x = r;
  }
  return (int)y;
}
__device__ __forceinline__ i64 sj_gcd(i64 a, i64 b) {
  u64 x = a < 0 ? (u64)0 - (u64)a : (u64)a, y = b < 0 ? (u64)0 - (u64)b : (u64)b;
  while (x != 0) {
    const u64 r = y % x;
    y = x;
    x = r;
  }
  return (i64)y;
}

// Float to integer as the reference casts: truncate, saturate, NaN to 0.
__device__ __forceinline__ int sj_f2i32(double x) {
  if (x != x) return 0;
  if (x >= 2147483647.0) return 2147483647;
  if (x <= -2147483648.0) return -2147483647 - 1;
  return (int)x;
}
__device__ __forceinline__ i64 sj_f2i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return 9223372036854775807LL;
  if (x <= -9223372036854775808.0) return SJ_I64_MIN;
  return (i64)x;
}

// maximum/minimum: NaN if either operand is NaN.
template <class T> __device__ __forceinline__ T sj_fmaximum(T x, T y) { return (x != x || y != y) ? x + y : (x < y ? y : x); }
template <class T> __device__ __forceinline__ T sj_fminimum(T x, T y) { return (x != x || y != y) ? x + y : (y < x ? y : x); }

// Reduction combines: `b` joins the accumulator `a`. Max and min propagate
// NaN; the softmax max skips it; argmax keeps the first maximal index
// (NaN maximal), so partial results combine in any order.
template <class T> __device__ __forceinline__ T sj_sum(T a, T b) { return a + b; }
__device__ __forceinline__ int sj_sum(int a, int b) { return sj_add(a, b); }
__device__ __forceinline__ i64 sj_sum(i64 a, i64 b) { return sj_add(a, b); }
template <class T> __device__ __forceinline__ T sj_prod(T a, T b) { return a * b; }
__device__ __forceinline__ int sj_prod(int a, int b) { return sj_mul(a, b); }
__device__ __forceinline__ i64 sj_prod(i64 a, i64 b) { return sj_mul(a, b); }
template <class T> __device__ __forceinline__ T sj_max(T a, T b) { return (b > a || b != b) ? b : a; }
template <class T> __device__ __forceinline__ T sj_min(T a, T b) { return (b < a || b != b) ? b : a; }
template <class T> __device__ __forceinline__ T sj_max_skip_nan(T a, T b) { return a < b ? b : a; }
template <class T> struct sj_arg { T v; i64 i; };
template <class T> __device__ __forceinline__ sj_arg<T> sj_argmax(sj_arg<T> a, sj_arg<T> b) {
  const bool an = a.v != a.v, bn = b.v != b.v;
  const bool take = b.v > a.v || (bn && !an) || ((b.v == a.v || (an && bn)) && b.i < a.i);
  return take ? b : a;
}

// Shuffles for every accumulator type.
__device__ __forceinline__ float sj_shfl(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double sj_shfl(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ int sj_shfl(int v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ i64 sj_shfl(i64 v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ bool sj_shfl(bool v, int o) { return __shfl_xor_sync(0xffffffffu, (int)v, o) != 0; }
template <class T> __device__ __forceinline__ sj_arg<T> sj_shfl(sj_arg<T> v, int o) { return {sj_shfl(v.v, o), sj_shfl(v.i, o)}; }

// Combines one value per thread of a group of G threads (a warp, or the
// whole block of G threads); every thread of the group gets the result,
// combined in the same order in each. `shared` holds a value per warp.
template <int G, class T, class F> __device__ __forceinline__ T sj_reduce(T v, F combine, T* shared) {
  for (int o = 16; o > 0; o >>= 1) v = combine(v, sj_shfl(v, o));
  if (G == 32) return v;
  __syncthreads();  // the previous reduction's readers are done with `shared`
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < G / 32; ++w) v = combine(v, shared[w]);
  return v;
}
template <int G> __device__ __forceinline__ void sj_sync() {
  if (G == 32) __syncwarp();
  else __syncthreads();
}

// A split reduction's partial result, in the workspace.
struct sj_slot {
  union { double f64; float f32; i64 i64v; int i32; bool b; } v;
  i64 i;
};
__device__ __forceinline__ void sj_put(sj_slot& s, double x) { s.v.f64 = x; }
__device__ __forceinline__ void sj_put(sj_slot& s, float x) { s.v.f32 = x; }
__device__ __forceinline__ void sj_put(sj_slot& s, i64 x) { s.v.i64v = x; }
__device__ __forceinline__ void sj_put(sj_slot& s, int x) { s.v.i32 = x; }
__device__ __forceinline__ void sj_put(sj_slot& s, bool x) { s.v.b = x; }
template <class T> __device__ __forceinline__ void sj_put(sj_slot& s, sj_arg<T> x) { sj_put(s, x.v); s.i = x.i; }
__device__ __forceinline__ void sj_get(const sj_slot& s, double& x) { x = s.v.f64; }
__device__ __forceinline__ void sj_get(const sj_slot& s, float& x) { x = s.v.f32; }
__device__ __forceinline__ void sj_get(const sj_slot& s, i64& x) { x = s.v.i64v; }
__device__ __forceinline__ void sj_get(const sj_slot& s, int& x) { x = s.v.i32; }
__device__ __forceinline__ void sj_get(const sj_slot& s, bool& x) { x = s.v.b; }
template <class T> __device__ __forceinline__ void sj_get(const sj_slot& s, sj_arg<T>& x) { sj_get(s, x.v); x.i = s.i; }

// Four consecutive elements in one access (two for 8-byte types); the
// caller checked the alignment.
template <class T> struct __align__(sizeof(T) * 4 > 16 ? 16 : sizeof(T) * 4) sj_quad { T x[4]; };
template <class T> __device__ __forceinline__ void sj_load4(const T* p, T* out) {
  const sj_quad<T> q = *reinterpret_cast<const sj_quad<T>*>(p);
#pragma unroll
  for (int k = 0; k < 4; ++k) out[k] = q.x[k];
}
template <class T> __device__ __forceinline__ void sj_store4(T* p, const T* in) {
  sj_quad<T> q;
#pragma unroll
  for (int k = 0; k < 4; ++k) q.x[k] = in[k];
  *reinterpret_cast<sj_quad<T>*>(p) = q;
}
__device__ __forceinline__ bool sj_aligned(const void* p, int bytes) { return ((u64)p & (u64)(bytes - 1)) == 0; }

)";
}

}  // namespace shapejit::backends::cuda
