// The LLVM backend's line routines: a scan step (loops::ScanStep: cumsum,
// cumprod, sort, argsort) over dense buffers viewed as [outer, n, inner],
// its lines split across TBB's threads; a scatter step (loops::ScatterStep:
// index_put, index_add), its columns split so.
#pragma once

#include <cstdint>

#include "backends/loops/loop_ir.h"

namespace shapejit::backends::cpu {

// `in_buf` of `in_dtype` (a scan's out has its dtype; argsort's is i64);
// a task takes about `work_per_task` elements.
void run_lines(const loops::ScanStep& c, ir::DType in_dtype, const char* in_buf, char* out_buf, int64_t outer, int64_t n, int64_t inner,
               int64_t work_per_task);

// out = in, then values' rows put or added at the index (i32 or i64, m of
// them); false, when an index is outside [0, n), before anything is written.
bool run_scatter(const loops::ScatterStep& c, ir::DType dtype, ir::DType index_dtype, const char* in, const char* index, const char* values,
                 char* out, int64_t outer, int64_t n, int64_t m, int64_t inner, int64_t work_per_task);

}  // namespace shapejit::backends::cpu
