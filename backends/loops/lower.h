// Graph → loop IR (loop_ir.h): fusion and index folding.
//
// Fusion: a value gets a buffer (is "materialized") only when it must: the
// graph's inputs and outputs; the results of reductions, normalizations,
// matmuls and concats; a matmul operand that is not already a dense buffer;
// a computed value that an index-changing op (a view or a gather) reads
// besides another consumer, so that it is not recomputed per index. Every
// other value (pointwise ops, views, full, arange, gathers) is folded into
// the loops of the step that reads it: a view becomes an index expression,
// broadcasting a zero index, a gather a checked load.
//
// Within one phase each (value, index) is computed once. Pointwise steps
// merge adjacent dims whose accesses all stride alike into one loop (so a
// dense [a, b, c] chain is a single loop) and split a long innermost loop
// into tiles so that threads share it.
#pragma once

#include "backends/loops/loop_ir.h"
#include "core/support/status.h"
#include "core/ir/specialize.h"

namespace shapejit::backends::loops {

struct LowerOptions {
  // Float matmuls as BLAS steps; off, they are loops like integer ones.
  bool blas = true;
  // Innermost tile of a pointwise step: the unit CPU threads share; 0 keeps
  // the innermost loop whole (a GPU spreads it over its own grid).
  int64_t tile = 4096;
  // A BLAS matmul's operand that is a view of a buffer (transposed,
  // permuted, sliced) is read in place, by its strides; off, it is copied
  // dense first (the CUDA backend, until its cuBLAS calls take strides).
  bool strided_operands = true;
  // A float cast (float32 <-> float64) of B read in place, that BLAS step's
  // B then being of the other type (MatmulStep): the backend converts it as
  // it packs, where a cast would write a dense copy and read it again.
  bool converting_operands = true;
  // softmax(f(q @ k)) @ v as one step (loop_ir.h AttentionStep), where f is
  // pointwise; needs BLAS and tiles (a CPU).
  bool fuse_attention = true;
  // A float softmax sums its exponentials (in f64) in a pass of its own,
  // over the row it stored, so that its exp pass runs at the float's vector
  // width; off (a GPU: no lanes to lose, and a pass can be a launch), exp
  // is in f64 and the sum beside it.
  bool softmax_sum_pass = true;
  // cumsum and cumprod as scan steps (loop_ir.h ScanStep), which the
  // backend runs itself; off, a graph with one is unsupported.
  bool scans = true;
  // index_put and index_add as scatter steps (loop_ir.h ScatterStep), which
  // the backend runs itself; off, a graph with one is unsupported.
  bool scatters = true;
  // nonzero and masked_select as compact steps (loop_ir.h CompactStep),
  // which the backend runs itself; off, a graph with one is unsupported.
  bool compaction = true;
  // Every compaction counted by a loop step before it, its mask and values
  // made dense there where they are not (a GPU: the backend's routine then
  // only fills); off, only a mask folded from others is (a CPU).
  bool count_steps = false;
};

Expected<LoopProgram> lower(const ir::SpecializedGraph& g, const LowerOptions& options = {});

}  // namespace shapejit::backends::loops
