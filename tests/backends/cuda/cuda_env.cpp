// Which CUDA driver the tests run on: the machine's GPU where it has one,
// else the mock driver and cuBLAS (tests/backends/cuda/mock_driver), named in
// $SHAPEJIT_CUDA_DRIVER and $SHAPEJIT_CUBLAS before any test opens the
// device. A run that names a driver itself keeps it (the mock on a GPU
// machine, to compare the two).
#include <cstdlib>

#ifdef SHAPEJIT_MOCK_CUDA
#include "backends/cuda/driver.h"

namespace {

[[maybe_unused]] const bool g_mock = [] {
  const char* named = std::getenv("SHAPEJIT_CUDA_DRIVER");
  if (named && *named) return false;
  if (shapejit::backends::cuda::open_device("libcuda.so.1").is_ok()) return false;
  setenv("SHAPEJIT_CUDA_DRIVER", SHAPEJIT_MOCK_CUDA, 1);
  setenv("SHAPEJIT_CUBLAS", SHAPEJIT_MOCK_CUDA, 1);
  return true;
}();

}  // namespace
#endif
