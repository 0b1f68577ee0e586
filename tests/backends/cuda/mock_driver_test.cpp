// The mock CUDA driver and cuBLAS (tests/backends/cuda/mock_driver) refuse what a
// real driver refuses, each with its reason, and run kernels as a GPU would:
// barriers and shuffles in lockstep, out-of-bounds and misaligned accesses
// fatal. Opened directly, so these run on a GPU machine too.
#include <gtest/gtest.h>

#if defined(SHAPEJIT_HAVE_CUDA) && defined(SHAPEJIT_MOCK_CUDA)

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"

namespace shapejit {
namespace {

namespace cuda = backends::cuda;

const cuda::Driver& cu() {
  static const cuda::Device* d = [] {
    auto dev = cuda::open_device(SHAPEJIT_MOCK_CUDA);
    EXPECT_TRUE(dev.is_ok()) << dev.status().to_string();
    return dev.is_ok() ? *dev : nullptr;
  }();
  EXPECT_TRUE(d->bind().is_ok());
  return *d->cu;
}

std::string why(CUresult r) {
  const char* s = nullptr;
  cu().cuGetErrorString(r, &s);
  return s ? s : "";
}

#define EXPECT_REFUSED(call, code, words)                                   \
  do {                                                                      \
    const CUresult r_ = (call);                                             \
    EXPECT_EQ(r_, code);                                                    \
    EXPECT_NE(why(r_).find(words), std::string::npos) << why(r_);           \
  } while (0)

CUdeviceptr alloc(size_t bytes) {
  CUdeviceptr p = 0;
  EXPECT_EQ(cu().cuMemAlloc(&p, bytes), CUDA_SUCCESS);
  return p;
}

// A module of `source`, compiled by NVRTC and told to the mock.
CUmodule load(const std::string& source) {
  auto image = cuda::nvrtc_compile(source, 90, false);
  EXPECT_TRUE(image.is_ok()) << image.status().to_string();
  cu().module_source(image->data(), image->size(), source.c_str());
  CUmodule m = nullptr;
  EXPECT_EQ(cu().cuModuleLoadData(&m, image->data()), CUDA_SUCCESS) << why(CUDA_ERROR_INVALID_IMAGE);
  return m;
}

CUfunction function(CUmodule m, const char* name) {
  CUfunction f = nullptr;
  EXPECT_EQ(cu().cuModuleGetFunction(&f, m, name), CUDA_SUCCESS);
  return f;
}

const char* kScale = R"(extern "C" __global__ void __launch_bounds__(256) scale(float* x, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += gridDim.x * 256LL) x[i] *= 2.0f;
})";

TEST(MockDriver, CopiesStayInsideOneLiveAllocation) {
  const CUdeviceptr p = alloc(1000), q = alloc(64);
  std::vector<char> host(2000, 7);
  EXPECT_EQ(cu().cuMemcpyHtoDAsync(p, host.data(), 1000, nullptr), CUDA_SUCCESS);
  EXPECT_REFUSED(cu().cuMemcpyHtoDAsync(p + 999, host.data(), 2, nullptr), CUDA_ERROR_INVALID_VALUE, "not inside one live allocation");
  EXPECT_REFUSED(cu().cuMemcpyDtoDAsync(q, p, 100, nullptr), CUDA_ERROR_INVALID_VALUE, "not inside one live allocation");
  EXPECT_REFUSED(cu().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(host.data()), host.data(), 4, nullptr), CUDA_ERROR_INVALID_VALUE,
                 "a host pointer where a device one belongs");
  EXPECT_REFUSED(cu().cuMemcpyDtoHAsync(reinterpret_cast<void*>(q), p, 4, nullptr), CUDA_ERROR_INVALID_VALUE,
                 "a device pointer where a host one belongs");
  std::vector<char> back(1000, 0);
  EXPECT_EQ(cu().cuMemcpyDtoHAsync(back.data(), p, 1000, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<char>(1000, 7));
  // New memory reads as 0xff bytes (NaN), not as zeros someone might rely on.
  float fresh = 0;
  EXPECT_EQ(cu().cuMemcpyDtoHAsync(&fresh, q, 4, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(std::isnan(fresh));
  EXPECT_EQ(cu().cuMemFree(p), CUDA_SUCCESS);
  EXPECT_REFUSED(cu().cuMemcpyDtoHAsync(back.data(), p, 4, nullptr), CUDA_ERROR_INVALID_VALUE, "the freed allocation");
  EXPECT_REFUSED(cu().cuMemFree(p), CUDA_ERROR_INVALID_VALUE, "not the start of a live allocation");
  EXPECT_EQ(cu().cuMemFree(q), CUDA_SUCCESS);
}

TEST(MockDriver, WorkOnAThreadNeedsItsContext) {
  const cuda::Driver& d = cu();
  std::thread([&d] {
    CUdeviceptr r = 0;
    const CUresult res = d.cuMemAlloc(&r, 16);
    EXPECT_EQ(res, CUDA_ERROR_INVALID_CONTEXT);
    const char* s = nullptr;
    d.cuGetErrorString(res, &s);
    EXPECT_NE(std::string(s).find("no context is current on this thread"), std::string::npos) << s;
  }).join();
}

TEST(MockDriver, LaunchesOutsideTheLimitsAreRefused) {
  const CUmodule m = load(kScale);
  const CUfunction f = function(m, "scale");
  CUdeviceptr x = alloc(1024 * sizeof(float));
  long long n = 1024;
  void* ok[] = {&x, &n};
  EXPECT_EQ(cu().cuLaunchKernel(f, 2, 1, 1, 256, 1, 1, 0, nullptr, ok, nullptr), CUDA_SUCCESS);
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 512, 1, 1, 0, nullptr, ok, nullptr), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                 "over its __launch_bounds__ of 256");
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, ok, nullptr), CUDA_ERROR_INVALID_VALUE, "block (2048, 1, 1)");
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 70000, 1, 256, 1, 1, 0, nullptr, ok, nullptr), CUDA_ERROR_INVALID_VALUE, "grid (1, 70000, 1)");
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 64 << 10, nullptr, ok, nullptr), CUDA_ERROR_INVALID_VALUE, "dynamic shared memory");
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE, "no kernelParams");
  std::vector<float> host(1024);
  float* h = host.data();
  void* from_host[] = {&h, &n};
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, from_host, nullptr), CUDA_ERROR_INVALID_VALUE, "is host memory");
  CUdeviceptr gone = alloc(64);
  EXPECT_EQ(cu().cuMemFree(gone), CUDA_SUCCESS);
  void* freed[] = {&gone, &n};
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, freed, nullptr), CUDA_ERROR_INVALID_VALUE, "freed allocation");
  EXPECT_EQ(cu().cuModuleUnload(m), CUDA_SUCCESS);
  EXPECT_REFUSED(cu().cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, ok, nullptr), CUDA_ERROR_INVALID_HANDLE, "not a function of a loaded module");
  CUstream s = nullptr;
  EXPECT_EQ(cu().cuStreamCreate(&s, 0), CUDA_SUCCESS);
  EXPECT_EQ(cu().cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_REFUSED(cu().cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE, "not a live stream");
  cu().cuMemFree(x);
}

TEST(MockDriver, AModuleNeedsItsSourceAndEveryKernelInTheImage) {
  auto image = cuda::nvrtc_compile(kScale, 90, false);
  ASSERT_TRUE(image.is_ok());
  std::string other = *image;
  other[other.size() - 1] ^= 1;  // the same cubin but for a byte: no source was given for it
  CUmodule m = nullptr;
  EXPECT_REFUSED(cu().cuModuleLoadData(&m, other.data()), CUDA_ERROR_INVALID_IMAGE, "none was given for this image");
  const std::string renamed = std::string(kScale) + "\nextern \"C\" __global__ void extra(int* p) { *p = 1; }\n";
  cu().module_source(image->data(), image->size(), renamed.c_str());
  EXPECT_REFUSED(cu().cuModuleLoadData(&m, image->data()), CUDA_ERROR_INVALID_IMAGE, "the image lacks kernel extra of its source");
  const char* text = "not a module";
  EXPECT_REFUSED(cu().cuModuleLoadData(&m, text), CUDA_ERROR_INVALID_IMAGE, "neither a cubin for a GPU nor PTX");
  // PTX is an image too.
  auto ptx = cuda::nvrtc_compile(kScale, 90, true);
  ASSERT_TRUE(ptx.is_ok());
  if (ptx->back() != '\0') ptx->push_back('\0');
  cu().module_source(ptx->data(), ptx->size(), kScale);
  EXPECT_EQ(cu().cuModuleLoadData(&m, ptx->data()), CUDA_SUCCESS) << why(CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cu().cuModuleUnload(m), CUDA_SUCCESS);
}

// A block sum: warp shuffles, then the warps' sums through shared memory
// across __syncthreads; a shuffle within groups of 8; and atomics over
// every block.
TEST(MockDriver, BlocksSynchronizeAndWarpsShuffleInLockstep) {
  const CUmodule m = load(R"(extern "C" __global__ void __launch_bounds__(256) sums(const int* x, int* out, int* eights) {
  int v = x[blockIdx.x * 256 + threadIdx.x];
  int e = v;
  for (int o = 4; o > 0; o >>= 1) e += __shfl_xor_sync(0xffffffffu, e, o, 8);
  eights[blockIdx.x * 256 + threadIdx.x] = e;
  atomicAdd(out + gridDim.x, x[blockIdx.x * 256 + threadIdx.x]);
  atomicMax(out + gridDim.x + 1, x[blockIdx.x * 256 + threadIdx.x]);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __shared__ int warps[8];
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (int w = 0; w < 8; ++w) s += warps[w];
    out[blockIdx.x] = s;
  }
})");
  const int blocks = 3;
  std::vector<int> x(blocks * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int>(i % 97) - 40;
  CUdeviceptr dx = alloc(x.size() * 4), dout = alloc((blocks + 2) * 4), deights = alloc(x.size() * 4);
  EXPECT_EQ(cu().cuMemcpyHtoDAsync(dx, x.data(), x.size() * 4, nullptr), CUDA_SUCCESS);
  const int start[2] = {0, -1000};  // the atomics' sum and max
  EXPECT_EQ(cu().cuMemcpyHtoDAsync(dout + blocks * 4, start, 8, nullptr), CUDA_SUCCESS);
  void* params[] = {&dx, &dout, &deights};
  ASSERT_EQ(cu().cuLaunchKernel(function(m, "sums"), blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS)
      << why(CUDA_ERROR_LAUNCH_FAILED);
  std::vector<int> out(blocks + 2), eights(x.size());
  EXPECT_EQ(cu().cuMemcpyDtoHAsync(out.data(), dout, (blocks + 2) * 4, nullptr), CUDA_SUCCESS);
  int total = 0;
  for (int v : x) total += v;
  EXPECT_EQ(out[blocks], total) << "atomicAdd";
  EXPECT_EQ(out[blocks + 1], *std::max_element(x.begin(), x.end())) << "atomicMax";
  EXPECT_EQ(cu().cuMemcpyDtoHAsync(eights.data(), deights, x.size() * 4, nullptr), CUDA_SUCCESS);
  for (int b = 0; b < blocks; ++b) {
    int want = 0;
    for (int i = 0; i < 256; ++i) want += x[b * 256 + i];
    EXPECT_EQ(out[b], want) << "block " << b;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    int want = 0;
    for (size_t j = i / 8 * 8; j < i / 8 * 8 + 8; ++j) want += x[j];
    ASSERT_EQ(eights[i], want) << "thread " << i;
  }
  for (CUdeviceptr p : {dx, dout, deights}) cu().cuMemFree(p);
  cu().cuModuleUnload(m);
}

TEST(MockDriver, LanesThatWaitApartFailTheLaunch) {
  const CUmodule m = load(R"(extern "C" __global__ void apart(int* x) {
  if (threadIdx.x < 16) __syncthreads(); else __syncwarp();
}
extern "C" __global__ void early(int* x) {
  if (threadIdx.x & 1) return;
  x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, 1);
})");
  CUdeviceptr x = alloc(256 * 4);
  void* params[] = {&x};
  EXPECT_REFUSED(cu().cuLaunchKernel(function(m, "apart"), 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_LAUNCH_FAILED,
                 "apart, block (0, 0, 0), warp 0: 16 lanes wait at __syncthreads, 16 at __syncwarp");
  EXPECT_REFUSED(cu().cuLaunchKernel(function(m, "early"), 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_ERROR_LAUNCH_FAILED,
                 "lane 0 shuffles with lane 1, which has returned");
  cu().cuMemFree(x);
  cu().cuModuleUnload(m);
}

// Two modules with one template instance of one name, whose shared arrays
// differ in size: each module's are its own. (They were one object across
// modules, a unique symbol the first module sized, which the second
// overran.)
TEST(MockDriver, EachModuleHasItsOwnStatics) {
  auto module = [](const char* type, int per_thread) {
    return load(std::string("template <int N> __device__ void body(long long* out) {\n  __shared__ ") + type + " s[" + std::to_string(per_thread) +
                R"( * N];
  for (int i = threadIdx.x; i < )" + std::to_string(per_thread) + R"( * N; i += N) s[i] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[N - 1 - threadIdx.x];
}
extern "C" __global__ void k(long long* out) { body<8>(out); })");
  };
  const CUmodule small = module("int", 1), large = module("long long", 64);
  CUdeviceptr out = alloc(8 * 8);
  void* params[] = {&out};
  for (CUmodule m : {small, large, small}) {
    ASSERT_EQ(cu().cuLaunchKernel(function(m, "k"), 1, 1, 1, 8, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS) << why(CUDA_ERROR_LAUNCH_FAILED);
    std::vector<long long> got(8);
    cu().cuMemcpyDtoHAsync(got.data(), out, 8 * 8, nullptr);
    EXPECT_EQ(got, (std::vector<long long>{7, 6, 5, 4, 3, 2, 1, 0}));
  }
  cu().cuMemFree(out);
  cu().cuModuleUnload(small);
  cu().cuModuleUnload(large);
}

// Death: a kernel reading past its allocation faults (the guard page), as
// one reading a float from an odd address traps; neither runs on.
TEST(MockDriverDeathTest, OutOfBoundsAndMisalignedAccessesAreFatal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const CUmodule m = load(R"(extern "C" __global__ void past(float* x, long long at) { x[at] = 1.0f; }
extern "C" __global__ void odd(char* x) { *(float*)(x + 1) = 1.0f; })");
  CUdeviceptr x = alloc(4096);
  long long at = 1024 + 64;  // past the last element, beyond the slack before the guard page
  void* past[] = {&x, &at};
  void* odd[] = {&x};
  EXPECT_DEATH(cu().cuLaunchKernel(function(m, "past"), 1, 1, 1, 1, 1, 1, 0, nullptr, past, nullptr), "");
  EXPECT_DEATH(cu().cuLaunchKernel(function(m, "odd"), 1, 1, 1, 1, 1, 1, 0, nullptr, odd, nullptr), "");
  at = 1023;
  EXPECT_EQ(cu().cuLaunchKernel(function(m, "past"), 1, 1, 1, 1, 1, 1, 0, nullptr, past, nullptr), CUDA_SUCCESS);
  cu().cuMemFree(x);
  cu().cuModuleUnload(m);
}

TEST(MockCublas, GemmsCheckTheirMatrices) {
  cu();  // the context
  void* lib = dlopen(SHAPEJIT_MOCK_CUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  auto create = reinterpret_cast<decltype(&cublasCreate)>(dlsym(lib, "cublasCreate_v2"));
  auto destroy = reinterpret_cast<decltype(&cublasDestroy)>(dlsym(lib, "cublasDestroy_v2"));
  auto gemm = reinterpret_cast<decltype(&cublasSgemmStridedBatched)>(dlsym(lib, "cublasSgemmStridedBatched"));
  cublasHandle_t h = nullptr;
  ASSERT_EQ(create(&h), CUBLAS_STATUS_SUCCESS);
  // Two batches of C (2 x 3) = A (2 x 4) B (4 x 3), column-major.
  const int m = 2, n = 3, k = 4, count = 2;
  std::vector<float> a(m * k * count), b(k * n * count);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 5) - 2;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 7) - 3;
  const CUdeviceptr da = alloc(a.size() * 4), db = alloc(b.size() * 4), dc = alloc(m * n * count * 4);
  cu().cuMemcpyHtoDAsync(da, a.data(), a.size() * 4, nullptr);
  cu().cuMemcpyHtoDAsync(db, b.data(), b.size() * 4, nullptr);
  const float one = 1, zero = 0;
  auto A = reinterpret_cast<const float*>(da), B = reinterpret_cast<const float*>(db);
  auto C = reinterpret_cast<float*>(dc);
  ASSERT_EQ(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, m, m * k, B, k, k * n, &zero, C, m, m * n, count), CUBLAS_STATUS_SUCCESS);
  std::vector<float> c(m * n * count);
  cu().cuMemcpyDtoHAsync(c.data(), dc, c.size() * 4, nullptr);
  for (int q = 0; q < count; ++q) {
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        float want = 0;
        for (int l = 0; l < k; ++l) want += a[q * m * k + l * m + i] * b[q * k * n + j * k + l];
        EXPECT_EQ(c[q * m * n + j * m + i], want);
      }
    }
  }
  // A leading dimension below its rows, a batch past B's allocation.
  EXPECT_EQ(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, 1, m * k, B, k, k * n, &zero, C, m, m * n, count), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, A, m, m * k, B, k, k * n, &zero, C, m, m * n, count + 1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(destroy(h), CUBLAS_STATUS_SUCCESS);
  for (CUdeviceptr p : {da, db, dc}) cu().cuMemFree(p);
}

}  // namespace
}  // namespace shapejit

#endif
