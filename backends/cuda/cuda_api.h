// The CUDA driver's and cuBLAS's declarations, from the toolkit's headers:
// the one place shapejit includes them (DESIGN.md, Layout). The backend's
// driver table (driver.h) and the mock driver the tests run on
// (tests/backends/cuda/mock_driver), which defines the same entry points,
// both take them from here.
#pragma once

#include <cublas_v2.h>
#include <cuda.h>
