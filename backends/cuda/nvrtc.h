// NVRTC: CUDA C to PTX or cubin, in process, with no GPU needed. Internal
// to backends/cuda.
#pragma once

#include <string>
#include <vector>

#include "core/support/status.h"

namespace shapejit::backends::cuda {

// "13.0": the NVRTC linked in.
std::string nvrtc_version();

// The architectures this NVRTC compiles for (sm_XY as XY), ascending.
std::vector<int> nvrtc_archs();

// `source` compiled for compute capability `arch` (90 for sm_90): a cubin,
// or PTX for `compute_<arch>` (what a newer driver can JIT) when `ptx`.
// A failure carries NVRTC's log and the path the source was written to.
Expected<std::string> nvrtc_compile(const std::string& source, int arch, bool ptx);

}  // namespace shapejit::backends::cuda
