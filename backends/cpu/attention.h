// The LLVM backend's attention runner: an attention step
// (loops::AttentionStep, softmax(f(q @ k)) @ v) by tasks of kTileQ query
// rows of a batch matrix, split across TBB's threads; each tile of keys
// goes through the GEMM, the step's generated code (`tile`) and the GEMM
// again, and no t x s buffer exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backends/cpu/step.h"
#include "backends/loops/loop_ir.h"

namespace shapejit::backends::cpu {

// `bufs` are the kernel's buffers on this call and `values` its symbols;
// tasks run on the calling thread below `work_per_task` multiply-adds.
// False when the generated code failed a check.
bool run_attention(const loops::AttentionStep& a, ir::DType dtype, char* const* bufs, std::span<const int64_t> values, const BoundStep& tile,
                   int64_t work_per_task);

}  // namespace shapejit::backends::cpu
