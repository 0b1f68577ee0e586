// The code of a kernel's loop steps, compiled step by step. Internal to
// backends/llvm.
//
// Each loop step is detached from its program (loops/detach_step.h) and
// keyed by its structure, so that equal steps compile once: the heads of a
// layer and the layers of a model, the entries and sites of a Jit, and the
// processes that share a disk folder or a Redis server. A step's code is a
// part in the kernel cache (cache/kernel_cache.h): its memory tier shares
// it within the process and single-flights concurrent compiles of it, its
// disk and Redis tiers keep it across processes. A kernel's distinct steps
// compile in parallel, on up to compile.threads threads.
#pragma once

#include <tbb/task_arena.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/llvm/codegen.h"
#include "backends/loops/loop_ir.h"
#include "cache/kernel_cache.h"

namespace shapejit::backends::llvm {

// A step's code as a kernel runs it: its function, what keeps the function
// alive, and where the function's buffers and symbols come from.
struct BoundStep {
  StepFn fn = nullptr;
  std::shared_ptr<const cache::Artifact> code;
  std::vector<int> buffers;  // per buffer the function reads: the kernel's buffer
  // Per symbol the function reads: the kernel's symbol, or -1 - j for the
  // j-th of `offsets`, the parts of its offsets it takes as parameters
  // (loops/detach_step.h), expressions in the kernel's symbols.
  std::vector<int> symbols;
  std::vector<sym::Expr> offsets;

  // The function's arguments gathered from the kernel's buffers, symbols
  // and offsets' values (`offset_values[j]` the j-th's): `local_bufs` and
  // `local_syms` hold at least as many as it reads.
  template <typename OffsetValues>
  void gather(char* const* bufs, const int64_t* values, const OffsetValues& offset_values, char** local_bufs, int64_t* local_syms) const {
    for (size_t i = 0; i < buffers.size(); ++i) local_bufs[i] = bufs[buffers[i]];
    for (size_t i = 0; i < symbols.size(); ++i) {
      const int s = symbols[i];
      local_syms[i] = s >= 0 ? values[s] : offset_values(static_cast<size_t>(-1 - s));
    }
  }
};

class StepCompiler {
 public:
  StepCompiler(int opt_level, std::string target);
  ~StepCompiler();
  // Keep steps in `s.cache` (else in a memory cache of the compiler's own)
  // and compile on up to `s.threads` threads.
  void attach(const CompileServices& s);

  // The code of each loop and attention step of `p` (an empty BoundStep
  // for the others), found in the cache or compiled; `phases` gets the
  // steps' counts and times.
  // `nodes`: the graph's, for the notice of a slow compile.
  Expected<std::vector<BoundStep>> bind(const loops::LoopProgram& p, size_t nodes, CompilePhases& phases);

 private:
  int opt_level_;
  std::string target_;
  CompileServices services_;
  int threads_;
  std::unique_ptr<cache::KernelCache> own_;
  cache::KernelCache* cache_;
  std::unique_ptr<tbb::task_arena> arena_;
};

}  // namespace shapejit::backends::llvm
