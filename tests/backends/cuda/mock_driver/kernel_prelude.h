// CUDA C on the host: what the mock driver (mock_cuda.h) compiles a module's
// source with (`-include`), so that the kernels NVRTC compiles for a GPU run
// on the CPU unchanged.
//
// A thread of a block is a fiber (lanes.h); `threadIdx` and the others read
// the running lane's ids, `__syncthreads`, `__syncwarp` and the shuffles
// suspend it until its block or warp arrives, and `__shared__` memory is one
// static copy: the mock runs one block at a time, in one launch at a time. The math
// functions are the C library's (a GPU's are within 2 ulp of them). Included
// only into emulated modules, never into the library or the mock.
#pragma once

#include "kernel_prelude_abi.h"

#include <stddef.h>

// The C library's math, declared rather than included (<math.h> is most of
// a module's compile time): the functions generated code calls.
#define SJ_MATH1(fn) double fn(double) noexcept; float fn##f(float) noexcept;
#define SJ_MATH2(fn) double fn(double, double) noexcept; float fn##f(float, float) noexcept;
extern "C" {
SJ_MATH1(fabs) SJ_MATH1(exp) SJ_MATH1(log) SJ_MATH1(sqrt) SJ_MATH1(sin) SJ_MATH1(cos) SJ_MATH1(tan) SJ_MATH1(asin) SJ_MATH1(acos)
SJ_MATH1(atan) SJ_MATH1(sinh) SJ_MATH1(cosh) SJ_MATH1(tanh) SJ_MATH1(asinh) SJ_MATH1(acosh) SJ_MATH1(atanh) SJ_MATH1(log1p)
SJ_MATH1(expm1) SJ_MATH1(log2) SJ_MATH1(log10) SJ_MATH1(exp2) SJ_MATH1(cbrt) SJ_MATH1(floor) SJ_MATH1(ceil) SJ_MATH1(trunc)
SJ_MATH1(rint) SJ_MATH1(erf) SJ_MATH1(erfc) SJ_MATH2(pow) SJ_MATH2(atan2) SJ_MATH2(hypot) SJ_MATH2(fmin) SJ_MATH2(fmax) SJ_MATH2(fmod) SJ_MATH2(nextafter)
double fma(double, double, double) noexcept;
float fmaf(float, float, float) noexcept;
}
#undef SJ_MATH1
#undef SJ_MATH2

inline const SjMockRuntime* sj_mock_rt = nullptr;

#define threadIdx (sj_mock_rt->lane()->threadIdx)
#define blockIdx (sj_mock_rt->lane()->blockIdx)
#define blockDim (sj_mock_rt->lane()->blockDim)
#define gridDim (sj_mock_rt->lane()->gridDim)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define __restrict__ __restrict

inline void __syncthreads() { sj_mock_rt->syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { sj_mock_rt->syncwarp(mask); }

template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  unsigned long long bits = 0;
  __builtin_memcpy(&bits, &v, sizeof v);
  bits = sj_mock_rt->shfl_xor(mask, bits, lane_mask, width);
  __builtin_memcpy(&v, &bits, sizeof v);
  return v;
}

// Atomics: blocks run one at a time and a block's lanes one at a time
// between waits, so each is a plain read-modify-write returning the old
// value.
template <class T, class F>
inline T sj_mock_rmw(T* p, F next) {
  const T old = *p;
  *p = next(old);
  return old;
}
template <class T> inline T atomicAdd(T* p, T v) { return sj_mock_rmw(p, [v](T o) { return o + v; }); }
template <class T> inline T atomicMax(T* p, T v) { return sj_mock_rmw(p, [v](T o) { return o < v ? v : o; }); }
template <class T> inline T atomicMin(T* p, T v) { return sj_mock_rmw(p, [v](T o) { return v < o ? v : o; }); }
template <class T> inline T atomicExch(T* p, T v) { return sj_mock_rmw(p, [v](T) { return v; }); }
template <class T> inline T atomicCAS(T* p, T expected, T v) { return sj_mock_rmw(p, [=](T o) { return o == expected ? v : o; }); }

inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
inline int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// A kernel as the mock calls it: its parameters from the driver's array of
// pointers (cuLaunchKernel's kernelParams), and their sizes.
template <unsigned...>
struct SjSeq {};
template <unsigned N, unsigned... I>
struct SjMakeSeq : SjMakeSeq<N - 1, N - 1, I...> {};
template <unsigned... I>
struct SjMakeSeq<0, I...> {
  using type = SjSeq<I...>;
};
template <class T>
struct SjBare {
  using type = T;
};
template <class T>
struct SjBare<const T> {
  using type = T;
};
template <class F>
struct SjMockSignature;
template <class... P>
struct SjMockSignature<void(P...)> {
  static constexpr size_t count = sizeof...(P);
  static constexpr size_t sizes[sizeof...(P) + 1] = {sizeof(P)..., 0};
  template <unsigned... I>
  static void call(void (*f)(P...), void** params, SjSeq<I...>) {
    f(*static_cast<const typename SjBare<P>::type*>(params[I])...);
  }
  static void call(void (*f)(P...), void** params) { call(f, params, typename SjMakeSeq<sizeof...(P)>::type{}); }
};

// What the mock looks up in a module, which is built with hidden symbols.
#define SJ_MOCK_EXPORT __attribute__((visibility("default")))

// The table the mock reads, one entry per kernel and a null name last
// (written after the source by the mock).
#define SJ_MOCK_KERNEL(name)                                                                                   \
  {                                                                                                            \
    #name, [](void** p) { SjMockSignature<decltype(name)>::call(name, p); }, SjMockSignature<decltype(name)>::count, \
        SjMockSignature<decltype(name)>::sizes                                                                 \
  }
