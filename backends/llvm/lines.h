// The LLVM backend's line routines: a scan step (loops::ScanStep: cumsum,
// cumprod, sort, argsort) over dense buffers viewed as [outer, n, inner],
// its lines split across TBB's threads.
#pragma once

#include <cstdint>

#include "backends/loops/loop_ir.h"

namespace shapejit::backends::llvm {

// `in_buf` of `in_dtype` (a scan's out has its dtype; argsort's is i64);
// a task takes about `work_per_task` elements.
void run_lines(const loops::ScanStep& c, ir::DType in_dtype, const char* in_buf, char* out_buf, int64_t outer, int64_t n, int64_t inner,
               int64_t work_per_task);

}  // namespace shapejit::backends::llvm
