// The CPU device: a loop program (backends/loops) run on the host's cores
// with TBB, its loop steps' code made by a compiler (backends/llvm) to the
// step ABI (step.h), its float matmuls on the device's own GEMM (gemm.h), or
// OpenBLAS for a matrix-vector product and on hosts without AVX2
// (matmul_plan.h: how a product splits into blocks; products.h: a block's
// product on either), its attention, compactions and scans on runners of
// their own (attention.h, compact.h, lines.h).
//
// A kernel runs its steps in order on the caller's inputs and outputs and on
// temporaries; outputs and each call's arena of temporaries (arena.h) come
// from the process's BlockPool, so a kernel called again faults in no new
// memory. Threads are TBB's only: matmuls split into blocks of rows (and
// columns), each a single-threaded product (OpenBLAS's own threads would
// spin against TBB's on the same cores); attention into tiles of queries.
// When a step reports a failed check (a gather index out of range, an
// integer to a negative power, max over an empty axis), the kernel hands
// the call to the reference interpreter (backends/fallback.h), which reports
// the same error in its own words.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/step.h"
#include "backends/loops/loop_ir.h"
#include "backends/pool/block_pool.h"

namespace shapejit::backends::cpu {

// The device as a backend holds it: the process's block pool, for the
// kernels' outputs and temporaries.
class Device {
 public:
  // Sets OpenBLAS to one thread: TBB splits the products.
  Device();

  // A dense tensor over a block of the pool (an output).
  ir::Tensor allocate(ir::DType dtype, std::span<const int64_t> shape) const;
  // The kernel that runs `p`, `steps[s]` the code of its step s (loop and
  // attention steps; an empty BoundStep for the others); `phases`: how its
  // compile went (Kernel::phases).
  std::unique_ptr<Kernel> kernel(loops::LoopProgram p, std::vector<BoundStep> steps, const CompilePhases& phases) const;

 private:
  std::shared_ptr<pool::BlockPool> pool_;
};

}  // namespace shapejit::backends::cpu
