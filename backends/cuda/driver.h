// The CUDA driver and cuBLAS, opened at run time (dlopen): the library
// builds, loads and runs on machines without a GPU or a driver, where
// `device()` says why there is none. Internal to backends/cuda.
#pragma once

#include <string>

#include "backends/cuda/cuda_api.h"
#include "core/support/status.h"

namespace shapejit::backends::cuda {

// The driver entry points used, by their versioned names (cuda.h maps
// cuMemAlloc to cuMemAlloc_v2 and so on).
#define SJ_CUDA_DRIVER_FUNCTIONS(X)                                                                                 \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet)            \
  X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxGetCurrent)      \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree)          \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async) X(cuStreamSynchronize)          \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) \
  X(cuEventDestroy) X(cuPointerGetAttribute)

#define SJ_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasGetVersion) X(cublasSgemmStridedBatched) X(cublasDgemmStridedBatched)

struct Driver {
#define SJ_DECLARE(f) decltype(&::f) f = nullptr;
  SJ_CUDA_DRIVER_FUNCTIONS(SJ_DECLARE)
#undef SJ_DECLARE
  // Optional, and only in a driver that runs kernels from their source
  // (the tests' mock, tests/backends/cuda/mock_driver): told the CUDA C of each image
  // before cuModuleLoadData loads it. A real driver has no such entry point.
  void (*module_source)(const void* image, size_t bytes, const char* source) = nullptr;
  // "CUDA_ERROR_INVALID_VALUE (invalid argument)", for messages.
  std::string error(CUresult r) const;
};

struct Cublas {
#define SJ_DECLARE(f) decltype(&::f) f = nullptr;
  SJ_CUBLAS_FUNCTIONS(SJ_DECLARE)
#undef SJ_DECLARE
};

// The device kernels run on: the first GPU, its primary context.
struct Device {
  const Driver* cu = nullptr;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int arch = 0;  // compute capability as 10 * major + minor
  int sms = 0;
  int driver_version = 0;  // 13000 for 13.0
  std::string name;
  // Makes the context current on the calling thread.
  Status bind() const;
};

// The process's device, opened once; the reason when there is none (no
// libcuda, the driver stub, no GPU, a driver older than NVRTC). The driver
// is libcuda.so.1, or the library $SHAPEJIT_CUDA_DRIVER names (the tests
// name their mock driver there).
Expected<const Device*> device();

// The device a driver library gives, opened afresh each time (device()
// keeps the first): for tests of the reasons.
Expected<const Device*> open_device(const std::string& driver_library);

// cuBLAS from the toolkit (libcublas.so.<major>, or $SHAPEJIT_CUBLAS),
// opened once; the reason when it cannot be opened. Matmuls become loops
// without it.
Expected<const Cublas*> cublas();

// A driver status as a Status: `what` failed, with the driver's words.
Status check(const Driver& cu, CUresult r, const std::string& what);

}  // namespace shapejit::backends::cuda
