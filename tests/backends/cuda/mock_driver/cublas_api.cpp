// The cuBLAS entry points of the mock: handles, streams, and the
// strided-batched gemms on OpenBLAS (column-major, as cuBLAS). Each
// matrix of the batch must lie in one live device allocation and be
// aligned to its element; leading dimensions as cuBLAS requires.
#include <cblas.h>

#include <cstdio>
#include <string>

#include "tests/backends/cuda/mock_driver/mock_cuda.h"

namespace shapejit::mock_cuda {
namespace {

struct Handle {
  CUstream stream = nullptr;
};

std::mutex g_mu;
std::map<const void*, Handle>& handles() {
  static auto* h = new std::map<const void*, Handle>;  // lives as long as the process
  return *h;
}
uintptr_t g_next = 4096;

cublasStatus_t refuse(cublasStatus_t code, const std::string& why) {
  std::fprintf(stderr, "shapejit mock cuBLAS: %s\n", why.c_str());
  return code;
}

// The elements op(X) spans: `rows` x `cols` of a column-major matrix with
// leading dimension `ld`, transposed when `t`.
size_t span(cublasOperation_t t, int rows, int cols, int ld) {
  const int r = t == CUBLAS_OP_N ? rows : cols, c = t == CUBLAS_OP_N ? cols : rows;
  return r == 0 || c == 0 ? 0 : static_cast<size_t>(ld) * static_cast<size_t>(c - 1) + static_cast<size_t>(r);
}

template <class T>
cublasStatus_t gemm_batched(const char* name, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const T* alpha,
                            const T* a, int lda, long long sa, const T* b, int ldb, long long sb, const T* beta, T* c, int ldc, long long sc,
                            int count) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!handles().count(h)) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, std::string(name) + ": not a live handle");
  }
  const std::string what = std::string(name) + ": ";
  if (m < 0 || n < 0 || k < 0 || count < 0) return refuse(CUBLAS_STATUS_INVALID_VALUE, what + "a negative size");
  const bool an = ta == CUBLAS_OP_N, bn = tb == CUBLAS_OP_N;
  if (lda < std::max(1, an ? m : k) || ldb < std::max(1, bn ? k : n) || ldc < std::max(1, m)) {
    return refuse(CUBLAS_STATUS_INVALID_VALUE, what + "a leading dimension below its matrix's rows");
  }
  if (!alpha || !beta || DeviceMemory::get().in_range(alpha) || DeviceMemory::get().in_range(beta)) {
    return refuse(CUBLAS_STATUS_INVALID_VALUE, what + "alpha and beta must be host pointers (the default pointer mode)");
  }
  if (m == 0 || n == 0 || count == 0) return CUBLAS_STATUS_SUCCESS;
  const size_t es = sizeof(T);
  for (int i = 0; i < count; ++i) {
    const struct {
      const char* name;
      const T* p;
      size_t elems;
    } mats[] = {{"A", a + i * sa, k ? span(ta, m, k, lda) : 0}, {"B", b + i * sb, k ? span(tb, k, n, ldb) : 0}, {"C", c + i * sc, span(CUBLAS_OP_N, m, n, ldc)}};
    for (const auto& x : mats) {
      if (x.elems == 0) continue;
      if (reinterpret_cast<uintptr_t>(x.p) % es != 0) return refuse(CUBLAS_STATUS_INVALID_VALUE, what + x.name + " is misaligned");
      const std::string e = DeviceMemory::get().check(x.p, x.elems * es);
      if (!e.empty()) return refuse(CUBLAS_STATUS_INVALID_VALUE, what + x.name + " of batch " + std::to_string(i) + ": " + e);
    }
  }
  const CBLAS_TRANSPOSE ca = an ? CblasNoTrans : CblasTrans, cb = bn ? CblasNoTrans : CblasTrans;
  for (int i = 0; i < count; ++i) {
    if constexpr (sizeof(T) == 4) {
      cblas_sgemm(CblasColMajor, ca, cb, m, n, k, *alpha, a + i * sa, lda, b + i * sb, ldb, *beta, c + i * sc, ldc);
    } else {
      cblas_dgemm(CblasColMajor, ca, cb, m, n, k, *alpha, a + i * sa, lda, b + i * sb, ldb, *beta, c + i * sc, ldc);
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace
}  // namespace shapejit::mock_cuda

using namespace shapejit::mock_cuda;

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t* h) {
  if (!h) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasCreate: null");
  std::lock_guard<std::mutex> lock(g_mu);
  *h = reinterpret_cast<cublasHandle_t>(g_next++);
  handles()[*h] = Handle{};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  return handles().erase(h) ? CUBLAS_STATUS_SUCCESS : refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy: not a live handle");
}

cublasStatus_t cublasGetVersion(cublasHandle_t h, int* v) {
  *v = 130000;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = handles().find(h);
  if (it == handles().end()) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream: not a live handle");
  if (!stream_is_live(reinterpret_cast<CUstream>(s))) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetStream: not a live stream");
  it->second.stream = reinterpret_cast<CUstream>(s);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* alpha,
                                         const float* a, int lda, long long sa, const float* b, int ldb, long long sb, const float* beta, float* c,
                                         int ldc, long long sc, int count) {
  return gemm_batched("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha,
                                         const double* a, int lda, long long sa, const double* b, int ldb, long long sb, const double* beta,
                                         double* c, int ldc, long long sc, int count) {
  return gemm_batched("cublasDgemmStridedBatched", h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count);
}

}  // extern "C"
