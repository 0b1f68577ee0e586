// Loop IR → CUDA C. Internal to backends/cuda.
//
// Every kernel takes one parameter, `Args`, by value:
//   struct Args { char* b[NB]; i64 s[NS]; int* err; i64 rows; i64 splits; sj_slot* ws; };
// `b` holds every buffer's device address (inputs, outputs, temps, in
// LoopProgram order); `s` the graph's symbols, then the strided inputs' strides
// (the dynamic symbols: specialized ones are constants in the source); `err`
// a flag the kernel sets when a runtime check fails; `rows` the step's outer
// iterations; `splits` and `ws` the split reduction's parts and partials
// (for a pointwise kernel, `splits` non-zero selects the flattened form).
// Every field is 8 bytes, so the host lays the struct out as an array.
//
// A loop step becomes, by its shape:
//   - pointwise (one phase, no reduction): `s<k>`, a grid-stride loop over
//     the phase's iterations (grid x) for each row (grid y), with a path
//     that reads and writes four elements per access where the buffers are
//     aligned; or, for many short rows, over rows and iterations flattened;
//   - rows (reductions, or phases that read each other's stores): `s<k>_w`
//     runs a row per warp (short rows), `s<k>_b` a row per 256-thread block;
//     each phase's reductions combine with warp shuffles (and shared memory
//     across warps), and every thread of the row sees the result;
//   - split (few long rows): `s<k>_p<phase>`, one launch per phase over
//     rows x splits blocks; each block reduces its part of the row into the
//     workspace, and later phases combine the parts first.
//   - compact (nonzero, masked_select): `s<k>`, a block of the domain
//     (CompactStep::kBlock elements) per 256-thread block, a run of
//     consecutive elements per thread: the threads count their runs, scan
//     the counts in shared memory, and write their set elements from the
//     block's start, which the host put in the count step's `counts` (their
//     exclusive prefix sum). The mask and values are dense (the lowering's
//     count step made them so).
// Matmul steps are cuBLAS calls (no source).
#pragma once

#include <string>
#include <vector>

#include "backends/loops/loop_ir.h"
#include "backends/loops/lower.h"
#include "core/support/status.h"

namespace shapejit::backends::cuda {

inline constexpr int kBlock = 256;  // threads per block, every kernel

// How graphs are lowered for the GPU: no tiles (the grid spreads loops),
// dense matmul operands, attention unfused, softmax's sum beside its exp.
loops::LowerOptions lower_options(bool blas);

struct StepPlan {
  enum class Kind : uint8_t { kPointwise, kRows, kMatmul, kCompact };
  Kind kind = Kind::kMatmul;
  std::string name;  // kernel name prefix: "s<k>"
  int phases = 0;
  int slots = 0;  // reductions over all phases: the split workspace per row and part
};

struct CudaSource {
  std::string code;
  std::vector<StepPlan> steps;  // one per LoopProgram step
  int num_buffers = 0, num_symbols = 0;
};

// The CUDA C for a program: the prelude, then its kernels (extern "C").
Expected<CudaSource> emit_cuda(const loops::LoopProgram& p);

// Bytes of the Args struct for a program: the kernel parameter.
inline size_t args_bytes(const CudaSource& s) { return 8 * static_cast<size_t>(s.num_buffers + s.num_symbols + 4); }

const char* prelude();

}  // namespace shapejit::backends::cuda
