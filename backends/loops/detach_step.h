// One loop step taken out of its program, so that equal steps share code.
//
// A model's twelve layers, and a layer's twelve heads, lower to steps that
// differ only in which buffers they read and write and which of the graph's
// symbols they read. Detached, a step is a one-step LoopProgram of its own:
// its buffers are numbered in the order the step first touches them, the
// symbols it reads (sizes, strides, task symbols, in that order of kinds)
// likewise, then its own loop variables and body indices; and its key is a
// hash of everything code generation reads of it. Two steps with one key
// compile to the same function: a backend compiles it once and runs it on
// each step's own buffers and symbols, gathered by the maps.
//
// What a load's or a store's offset adds that no loop of the step varies
// (a constant, i * rows * cols for the i-th slice x[i]) is taken out of
// the code too, into a parameter the kernel evaluates on each call: the
// steps of an unrolled loop that read x[i] differ by that term alone, and
// share one function (a scan of 1,000 steps compiled 1,000 before). The
// parameters are strides' kind of symbol (they may be negative).
//
// Renumbering never merges steps that would compile differently: the key
// holds every instruction, expression, dtype and the kind of each symbol
// (sizes and task symbols are never negative, strides may be, and the code
// generated for a division depends on it). Equal steps that happen to meet
// their symbols in another order get other keys: a missed share, never a
// wrong one.
#pragma once

#include <vector>

#include "backends/loops/loop_ir.h"
#include "core/support/hash.h"

namespace shapejit::backends::loops {

struct DetachedStep {
  // One kLoops step (an attention step's tile code, as a loop step), with
  // its buffers (only their dtypes matter) and symbols renumbered; its
  // `params` are placeholders that only count the strides.
  LoopProgram program;
  std::vector<int> buffers;  // per buffer of `program`: the original program's buffer
  // Per symbol `program`'s code reads: the original program's symbol, or
  // -1 - j for the j-th of `offsets`, in the original program's symbols.
  std::vector<int> symbols;
  std::vector<sym::Expr> offsets;
  Hash128 key;               // of the step's structure, as code generation sees it
};

// Step `step` of `p`, which must be a kLoops or a kAttention step.
DetachedStep detach_step(const LoopProgram& p, int step);

}  // namespace shapejit::backends::loops
