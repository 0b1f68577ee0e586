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
#include "backends/cpu/step.h"
#include "backends/llvm/codegen.h"
#include "backends/loops/loop_ir.h"
#include "cache/kernel_cache.h"

namespace shapejit::backends::llvm {

using cpu::BoundStep;

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
  // `nodes`: the graph's, for the notice of a slow compile. A background
  // compile's steps compile one after another on the calling thread.
  Expected<std::vector<BoundStep>> bind(const loops::LoopProgram& p, size_t nodes, CompilePhases& phases, const CompileContext& context);

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
