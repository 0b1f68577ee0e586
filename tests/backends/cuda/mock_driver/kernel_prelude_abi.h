// What an emulated module and the mock driver share (kernel_prelude.h,
// mock_cuda.h): the lane ids, the runtime the mock lends a module, and the
// table of kernels a module exports.
#pragma once

#include <stddef.h>

struct SjDim3 {  // CUDA's dim3
  unsigned x = 1, y = 1, z = 1;
};

// The ids of the lane that runs.
struct SjMockLane {
  SjDim3 threadIdx, blockIdx, blockDim, gridDim;
};

// What the mock lends a module (sj_mock_bind): the running lane, and the
// operations that wait for a block or a warp.
struct SjMockRuntime {
  const SjMockLane* (*lane)();
  void (*syncthreads)();
  void (*syncwarp)(unsigned mask);
  unsigned long long (*shfl_xor)(unsigned mask, unsigned long long bits, int lane_mask, int width);
};

// A module's kernels: `sj_mock_kernels`, a null name last.
struct SjMockKernel {
  const char* name;
  void (*run)(void** params);
  size_t num_params;
  const size_t* param_sizes;
};
