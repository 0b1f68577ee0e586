#include "backends/cpu/matmul_plan.h"

#include <algorithm>

#include "backends/cpu/gemm.h"
#include "backends/cpu/products.h"

namespace shapejit::backends::cpu {

MatmulPlan plan_matmul(const loops::MatmulShape& shape, size_t element_bytes, bool converts, int64_t threads) {
  const int64_t m = shape.m, n = shape.n, k = shape.k, count = shape.count;
  MatmulPlan p;
  // A batch of products sharing one B (a layer's weights) whose A rows are
  // evenly spaced across the batch is one product of count * m rows, so
  // that B is packed once, not once per matrix.
  p.flat = count > 1 && shares_b(shape);
  p.rows_total = p.flat ? count * m : m;
  p.matrices = p.flat ? 1 : count;
  p.own = converts || own_gemm(k, n, element_bytes);
  const bool streams_b = p.rows_total * p.matrices <= kTileRows && k * n * static_cast<int64_t>(element_bytes) >= kSharedStreamBytes;
  p.parallel = m * n * std::max<int64_t>(k, 1) * count >= kMatmulWorkPerTask || (threads > 1 && streams_b);
  p.rows_per_task = p.rows_total;
  p.cols_per_task = n;
  // Tasks: blocks tall enough to run as a matrix product (a row alone is a
  // memory-bound matrix-vector product). Fewer row blocks than threads (a
  // short sequence, a small batch of decode steps) split the columns too.
  if (p.parallel) {
    const int64_t rows_all = p.rows_total * p.matrices;
    if (p.own) {
      // Blocks of equal height, a whole number per thread (the threads end
      // together): 64 tokens on 2 threads are 2 x 32 rows, not 48 + 16. On
      // one thread, where no other thread waits for the longest block, a
      // block whose last tile would have at most half a tile's rows (a
      // split-k tile, whose fixed costs fall on few rows) is made whole
      // tiles tall, leaving the last block shorter.
      int64_t blocks = std::clamp<int64_t>(rows_all / kMatmulMinRows, 1, kMatmulBlocksPerThread * threads);
      if (blocks > threads) blocks -= blocks % threads;
      int64_t height = (rows_all + blocks - 1) / blocks;
      const int64_t short_rows = height % kTileRows;
      if (threads == 1 && blocks > 1 && short_rows > 0 && short_rows <= kTileRows / 2) height += kTileRows - short_rows;
      p.rows_per_task = std::min(p.rows_total, height);
    } else {
      p.rows_per_task = std::min(p.rows_total, std::max(kMatmulMinRows, (rows_all + threads - 1) / threads));
    }
    const int64_t row_tasks = p.matrices * ((p.rows_total + p.rows_per_task - 1) / p.rows_per_task);
    if (row_tasks < threads) {
      const int64_t splits = (threads + row_tasks - 1) / row_tasks;
      p.cols_per_task = std::min(n, std::max(kMatmulMinCols, ((n + splits - 1) / splits + 15) / 16 * 16));
    }
  }
  p.row_blocks = (p.rows_total + p.rows_per_task - 1) / p.rows_per_task;
  p.col_blocks = (n + p.cols_per_task - 1) / p.cols_per_task;
  return p;
}

bool packs_b_once(const loops::MatmulShape& shape, const MatmulPlan& plan, size_t element_bytes, bool b_is_input) {
  const bool streamed = b_is_input && shape.k * shape.n * static_cast<int64_t>(element_bytes) >= kSharedStreamBytes;
  return plan.own && plan.matrices == 1 && (plan.rows_total > 1 || streamed) && shape.n > 1 && shape.k > 0;
}

PackedB pack_b(const loops::MatmulShape& shape, const MatmulPlan& plan, ir::DType dt, ir::DType bt, const char* b, bool b_is_input) {
  PackedB packed;
  const int64_t n = shape.n, k = shape.k;
  with_types(dt, bt, [&](auto t, auto s) {
    using T = decltype(t);
    using S = decltype(s);
    const S* from = reinterpret_cast<const S*>(b);
    if (b_is_input) {
      packed.frozen = frozen_panels<T>(k, n, from, shape, plan.parallel);
      packed.panels = static_cast<const char*>(packed.frozen.get());
    }
    if (!packed.panels && plan.rows_total > kStreamRows) packed.panels = reinterpret_cast<const char*>(pack_shared<T>(k, n, from, shape, plan.parallel));
  });
  return packed;
}
}  // namespace shapejit::backends::cpu
