// Loop IR → LLVM IR. Internal to backends/llvm.
//
// Each loop step becomes one function of the CPU device's step ABI
// (backends/cpu/step.h)
//   i32 step_<k>(ptr bufs, ptr syms, i64 begin, i64 end)
// over every buffer's base address (inputs, outputs, temps, in LoopProgram
// order) and the graph's symbols followed by the input strides.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/step.h"
#include "backends/loops/loop_ir.h"
#include "core/support/status.h"

namespace llvm {
class Module;
}

namespace shapejit::backends::llvm {

using cpu::StepFn;

// Emits one function per loop step, named by step_names.
Status emit_program(const loops::LoopProgram& p, ::llvm::Module& m);
// The function of each step ("" for steps that are not loops): a step's
// name is its index, so an object compiled in another process links too.
std::vector<std::string> step_names(const loops::LoopProgram& p);

// Integer power by squaring in wrapping arithmetic; the JIT'd code calls it.
extern "C" int64_t shapejit_ipow_i64(int64_t base, int64_t exp);
// Euclid's gcd of two magnitudes; the JIT'd code calls it (NumPy's gcd).
extern "C" uint64_t shapejit_gcd_u64(uint64_t a, uint64_t b);
// The multiplier that divides by `divisor` (>= 1, below 2^63) in the JIT'd
// code: floor(2^64 * (2^l - divisor) / divisor) + 1, l = ceil(log2 divisor).
extern "C" int64_t shapejit_udiv_magic(int64_t divisor);

}  // namespace shapejit::backends::llvm
