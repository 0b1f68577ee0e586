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

// What ptxas reports of each kernel of a cubin for sm_<arch> (-v): the
// registers a thread uses, its spills and stack, the block's static shared
// memory.
struct KernelResources {
  std::string name;
  int registers = 0;
  int spill_stores = 0, spill_loads = 0;  // bytes
  int stack_bytes = 0;
  int shared_bytes = 0;
};
Expected<std::vector<KernelResources>> nvrtc_resources(const std::string& source, int arch);

}  // namespace shapejit::backends::cuda
