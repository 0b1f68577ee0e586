// What a compiled step is to the CPU device: the ABI between the code a
// compiler makes for a loop step (backends/llvm today) and the kernel that
// runs it (kernel.h).
//
// Each loop step is one function
//   int32_t step(char* const* bufs, const int64_t* syms, int64_t begin, int64_t end)
// that runs the step's flattened outer iterations [begin, end): `bufs` holds
// the base address of each buffer it reads, `syms` each symbol it reads
// (BoundStep says which of the kernel's). It returns non-zero when a runtime
// check failed (a gather index out of range, an integer raised to a negative
// power); the kernel then hands the call to the reference interpreter, which
// reports the error in its own words.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cache/artifact.h"
#include "core/sym/expr.h"

namespace shapejit::backends::cpu {

using StepFn = int32_t (*)(char* const* bufs, const int64_t* syms, int64_t begin, int64_t end);

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

}  // namespace shapejit::backends::cpu
