// A CUDA driver and cuBLAS for the tests, on the CPU (libshapejit_mock_cuda.so).
//
// The backend opens it where it would open libcuda.so.1 and libcublas
// ($SHAPEJIT_CUDA_DRIVER and $SHAPEJIT_CUBLAS; tests/backends/cuda/cuda_env.cpp
// names it when the machine has no GPU). It exports the entry points the
// backend resolves (backends/cuda/driver.h) and runs what they ask on the
// host, refusing what a real driver refuses:
//
//   - memory (device_memory.cpp): device allocations lie in an address range
//     of their own, each ending at a page the process cannot touch, filled
//     with 0xff bytes (NaN, -1) so that reading what nobody wrote shows;
//     copies and launches check that device pointers lie in one live
//     allocation and that host pointers are not passed for device ones;
//   - modules (modules.cpp): the backend tells the mock each image's CUDA C
//     (shapejitModuleSource) before cuModuleLoadData; the mock checks that
//     the image is a cubin holding every kernel of the source, compiles the
//     source for the host with kernel_prelude.h and loads it;
//   - launches (lanes.cpp): grid, block and shared memory within an H100's
//     limits and the kernel's __launch_bounds__, parameters as its
//     signature has them; each block's threads run as fibers, barriers and
//     shuffles waiting for their block or warp;
//   - cuBLAS (cublas_api.cpp): the strided-batched gemms on OpenBLAS, each
//     matrix checked to lie in one allocation.
//
// Work runs when it is submitted, one launch at a time in the process, in
// submission order (a valid order of a GPU's streams); events time it on
// the host clock. A refusal returns the driver's code, and cuGetErrorString
// then gives the mock's reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_api.h"
#include "tests/backends/cuda/mock_driver/kernel_prelude_abi.h"

namespace shapejit::mock_cuda {

// Records why the mock refuses a call (for cuGetErrorString) and returns
// the code.
CUresult fail(CUresult code, const std::string& why);
// Whether `s` is a stream of the mock's (or one of the driver's own).
bool stream_is_live(CUstream s);
// The reason recorded with `code` on this thread, or nullptr.
const char* reason(CUresult code);

class DeviceMemory {
 public:
  static DeviceMemory& get();

  // nullptr when the range is spent.
  void* allocate(size_t bytes);
  // False when `p` is not the start of a live allocation.
  bool release(void* p);
  bool in_range(const void* p) const;
  // "" when [p, p + bytes) lies in one live allocation; else what is wrong.
  std::string check(const void* p, size_t bytes) const;
  // "" when a launch may pass `word` (a parameter's 8 bytes): not a pointer,
  // or a device pointer into (or to the end of) a live allocation.
  std::string check_word(uint64_t word) const;

 private:
  DeviceMemory();
  std::string describe(const void* p) const;

  mutable std::mutex mu_;
  char* base_ = nullptr;
  size_t next_ = 0;
  std::map<uintptr_t, size_t> live_, freed_;  // start: bytes
};

// A kernel of a loaded module, as the host compile exports it.
struct Kernel {
  std::string name;
  int max_threads = 1024;  // __launch_bounds__
  void (*run)(void** params) = nullptr;
  std::vector<size_t> param_sizes;
};

struct Module {
  void* library = nullptr;  // dlopen'ed host code
  std::vector<Kernel> kernels;
};

// Remembers the CUDA C of an image (shapejitModuleSource).
void remember_source(const void* image, size_t bytes, const char* source);
// The module for an image: its source, checked against it, compiled for the
// host (or found compiled) and loaded.
CUresult load_module(const void* image, Module& out);

// What modules call back into (kernel_prelude.h): the lanes' ids, barriers
// and shuffles.
const SjMockRuntime& lane_runtime();

// Runs every block of a launch; "" or what went wrong (a deadlock, lanes of
// a warp that shuffle apart).
std::string run_grid(const Kernel& k, void** params, SjDim3 grid, SjDim3 block);

}  // namespace shapejit::mock_cuda
